// The policy pack program: `pulumi preview --policy-pack <this directory>` (or, where the Node.js
// language host cannot start a policy directory, `--policy-pack <this directory>/analyzer`).
import { PolicyPack } from "@pulumi/policy";
import { POLICIES } from "./policies.js";

new PolicyPack("kube-proxy-mode", { policies: POLICIES });
