// fastest-levenshtein, as this package loads it: the build bundles it (docs/design.md, "The libraries load as bundles").
export * from "fastest-levenshtein";
