// Preloaded into Stryker's test-runner processes (scripts/mutation.mjs): mocha 12 ships its CLI
// helpers as .cjs files, which the mocha runner requires without an extension; letting require()
// try .cjs as it tries .js makes them found.
require.extensions[".cjs"] ??= require.extensions[".js"];
