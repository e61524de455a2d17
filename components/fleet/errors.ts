// Why the fleet's Temporal side cannot go on (no binary, no server, no SDK): one message and the
// lines that explain it, and whether the user's input must change. The CLI shows it as its own.

export class FleetSetupError extends Error {
    constructor(
        message: string,
        /** 2: the input must change (a flag, a missing binary or SDK); 1: it failed as given */
        readonly exitCode: 1 | 2 = 1,
        readonly lines: string[] = [],
    ) {
        super(message);
        this.name = "FleetSetupError";
    }
}
