// ipaddr.js, as this package loads it: the build bundles it (docs/design.md, "The libraries load as bundles").
// eslint-disable-next-line @typescript-eslint/no-require-imports -- its types are `export =`, which only this form re-exports
import ipaddr = require("ipaddr.js");
export = ipaddr;
