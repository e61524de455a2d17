#!/usr/bin/env node
// A user's verification hook, as a team would write one: it gets NODE, POOL, MODE and
// KUBECONFIG in its environment. For the test, FAIL_ON_NODE names a node where the
// NodePort "does not answer".
const node = process.env.NODE;
if (!node || !process.env.POOL || !process.env.MODE || !process.env.KUBECONFIG) {
    console.error("hook: NODE, POOL, MODE and KUBECONFIG must be set");
    process.exit(2);
}
if (process.env.FAIL_ON_NODE && process.env.FAIL_ON_NODE === node) {
    console.error(`NodePort 30080 did not answer on ${node} (mode ${process.env.MODE})`);
    process.exit(1);
}
console.log(`NodePort 30080 answers on ${node}`);
