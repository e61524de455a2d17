// A Pulumi TypeScript program that uses KubeProxyMode through the generated Node.js SDK
// (sdk/nodejs, compiled by the test into the directory KPM_GENERATED_SDK names), which registers it
// as a remote component served by the provider plugin. Same stack config as the program behind the
// root Pulumi.yaml (components/program), same outputs.
import { programArgs } from "../../../components/program/args.js";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = require(process.env.KPM_GENERATED_SDK!);
const kp = new sdk.KubeProxyMode("kube-proxy", programArgs());

export const configDiff = kp.configDiff;
export const plan = kp.plan;
export const findings = kp.findings;
export const configHash = kp.configHash;
export const mode = kp.mode;
export const change = kp.change;
