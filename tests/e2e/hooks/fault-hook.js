#!/usr/bin/env node
// A verification hook the fault-injection tests steer: it reads FAULT_FILE on every run
// ({"fail": ["node", ...], "sleepMs": N}), so a test can make a node fail (or a check take
// time, to have a window to kill the run in) between two runs of the rollout.
const { readFileSync } = require("node:fs");
const node = process.env.NODE;
let control = {};
try {
    control = JSON.parse(readFileSync(process.env.FAULT_FILE, "utf8"));
} catch {
    /* no file: pass */
}
const done = () => {
    if ((control.fail || []).includes(node)) {
        console.error(`SIMULATED check failure on ${node} (mode ${process.env.MODE})`);
        process.exit(1);
    }
    console.log(`check passed on ${node}`);
};
if (control.sleepMs) setTimeout(done, control.sleepMs);
else done();
