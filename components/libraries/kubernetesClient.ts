// @kubernetes/client-node, as this package loads it: the build bundles it (docs/design.md, "The libraries load as bundles").
export * from "@kubernetes/client-node";
// not re-exported by the package's index; the API classes take it to change how a response is read
export { CoreV1ApiResponseProcessor } from "@kubernetes/client-node/dist/gen/apis/CoreV1Api.js";
