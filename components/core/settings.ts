// The shape of what a user asks for (zod), turned into findings that name the field.
import { z } from "../libraries/zod.js";
import { isObject } from "./config.js";
import { PROXY_MODES, type DesiredSettings, type Finding } from "./types.js";
import { parseKubeVersion } from "./versions.js";

const modeMessage =
    `mode is required and must be one of ${PROXY_MODES.join(", ")}: an empty or missing mode follows upstream's default, ` +
    `which is iptables today and is planned to become nftables, so an unpinned cluster changes data plane when someone else decides`;

/** zod drops a "__proto__" key without a word; kube-proxy would refuse it as an unknown gate, so say so. */
function refuseProtoKey(gates: unknown, ctx: z.RefinementCtx): unknown {
    if (isObject(gates) && Object.hasOwn(gates, "__proto__"))
        ctx.addIssue({
            code: "custom",
            path: ["__proto__"],
            message: `"__proto__" is not a feature gate of any Kubernetes release: kube-proxy refuses to start on an unknown gate; remove it`,
        });
    return gates;
}

export const desiredSettingsSchema = z
    .object({
        mode: z
            .enum(PROXY_MODES, { error: modeMessage })
            .describe(
                'The target mode: "iptables", "ipvs" or "nftables" (an unpinned mode follows upstream\'s default).',
            ),
        featureGates: z
            .preprocess(
                refuseProtoKey,
                z.record(z.string().min(1), z.boolean({ error: "feature-gate values must be true or false" })),
            )
            .optional()
            .describe(
                "kube-proxy feature gates to set; unknown names fail unless allowUnknownFeatureGates. Default: the current configuration's gates are kept.",
            ),
        nodePortAddresses: z
            .array(
                z.string({ error: "each nodePortAddresses entry must be a string (a CIDR or primary/localhost/all)" }),
            )
            .optional()
            .describe(
                'Addresses NodePorts answer on: CIDRs, "primary" or "localhost". Default: the current configuration\'s value.',
            ),
        conntrack: z
            .object({
                tcpBeLiberal: z
                    .boolean({ error: "conntrack.tcpBeLiberal must be true or false" })
                    .optional()
                    .describe("Accept out-of-window TCP packets. Default: the current configuration's value."),
            })
            .strict()
            .optional()
            .describe("conntrack settings. Default: the current configuration's values."),
        kubernetesVersion: z
            .string()
            .refine((v) => parseKubeVersion(v) !== undefined, {
                message: 'kubernetesVersion must look like "1.37" or "v1.37.2"',
            })
            .optional()
            .describe('The cluster\'s release, e.g. "1.37". Default: detected from the API server.'),
        allowUnknownFeatureGates: z
            .boolean()
            .optional()
            .describe("Accept feature gates this release does not know. Default: false."),
    })
    .strict();

/** Validates the shape of desired settings; the meaning is checked by the rules. */
export function validateDesired(input: unknown): { settings?: DesiredSettings; findings: Finding[] } {
    const parsed = desiredSettingsSchema.safeParse(input);
    if (parsed.success) return { settings: parsed.data, findings: [] };
    const findings: Finding[] = parsed.error.issues.map((issue) => {
        const field = issue.path.length ? issue.path.map(String).join(".") : "settings";
        let message = issue.message;
        if (issue.code === "unrecognized_keys") message = `unknown setting(s) ${issue.keys.join(", ")}`;
        const mode = isObject(input) ? input.mode : undefined;
        if (field === "mode" && mode !== undefined && mode !== "") {
            message = `mode ${JSON.stringify(mode)} is not a kube-proxy mode; ${modeMessage}`;
        }
        return { severity: "error", code: "settings.shape", field, message };
    });
    return { findings };
}
