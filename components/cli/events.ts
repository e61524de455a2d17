// rollout --events FILE (or KPM_EVENTS_FILE): the runner's node events (components/rollout/events.ts)
// for a program to read, one JSON object a line, appended as they happen. A pool's step and the
// finish's append to one file, so a `pulumi up` leaves the whole rollout there (the Command steps
// run the CLI with the engine's environment: KPM_EVENTS_FILE set for `pulumi up` reaches each).
import { closeSync, openSync, writeSync } from "node:fs";
import type { NodeEvent } from "../rollout/events.js";
import { CliError } from "./output.js";

/** A JSON-lines file the run's events are appended to, each written at once (a run that dies leaves every event before it). */
export interface EventsFile {
    write(event: NodeEvent): void;
    close(): void;
}

/** Opens `path` for appending (made when missing); a path that cannot be written is the CLI's error. */
export function openEventsFile(path: string): EventsFile {
    let fd: number;
    try {
        fd = openSync(path, "a", 0o600);
    } catch (e) {
        throw new CliError(`--events ${path}: cannot write there: ${(e as Error).message}`);
    }
    return {
        write: (event) => void writeSync(fd, `${JSON.stringify(event)}\n`),
        close: () => closeSync(fd),
    };
}

/** The events file asked for: --events, else KPM_EVENTS_FILE; none when neither is set. */
export function eventsFileOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): EventsFile | undefined {
    const path = flag ?? env.KPM_EVENTS_FILE;
    return path ? openEventsFile(path) : undefined;
}
