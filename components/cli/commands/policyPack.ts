import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { commandFlags, flag } from "../args.js";
import { CliError, EXIT } from "../output.js";
import type { Io } from "../io.js";

export const POLICY_PACK_HELP = `kube-proxy-mode policy-pack [--launcher] [--json|-o yaml]

Prints where the guard-rail policy pack is, for pulumi preview/up --policy-pack:

  pulumi preview --policy-pack "$(npx kube-proxy-mode policy-pack)"

  --launcher   the pack's executable launcher instead of its directory: for a Node.js language
               host that cannot start a policy directory ("could not read plugin [...]: not
               supported")
  --json       the directory, the launcher and the policies with their descriptions
  -o, --output json|yaml   -o json is --json; -o yaml the same object as YAML

Exit codes: 0, 2 invalid flags.`;

/** The pack directory of this installation (components/policy beside dist/). */
export function policyPackPaths(): { directory: string; launcher: string } {
    const directory = join(__dirname, "..", "..", "..", "..", "components", "policy");
    return { directory, launcher: join(directory, "analyzer") };
}

/** policy-pack's flags. */
export const POLICY_PACK_FLAGS = { launcher: flag.switch(), json: flag.switch(), output: flag.output() };

export async function policyPackCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("policy-pack", argv, given, POLICY_PACK_FLAGS, POLICY_PACK_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    const paths = policyPackPaths();
    try {
        accessSync(join(paths.directory, "PulumiPolicy.yaml"), constants.R_OK);
        accessSync(paths.launcher, constants.X_OK);
    } catch {
        throw new CliError(
            `the policy pack is not where this installation keeps it (${paths.directory}): reinstall kube-proxy-mode`,
            EXIT.failed,
        );
    }
    if (flags.json) {
        const { POLICIES } = await import("../../policy/policies.js");
        const policies = POLICIES.map((p) => ({
            name: p.name,
            description: p.description,
            enforcementLevel: p.enforcementLevel,
            config: Object.keys(p.configSchema?.properties ?? {}),
        }));
        io.json({ ...paths, policies });
        return EXIT.ok;
    }
    io.out(flags.launcher ? paths.launcher : paths.directory);
    return EXIT.ok;
}
