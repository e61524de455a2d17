// Writes schema.json (repository root): the `kube-proxy-mode` plugin's package schema, generated
// from the component's zod input schemas. `node dist/scripts/providerSchema.js [out]`.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { packageVersion } from "../components/provider/provider.js";
import { packageSchema } from "../components/provider/schema.js";
import { ROOT } from "./referenceCluster.js";

export function schemaText(): string {
    return `${JSON.stringify(packageSchema(packageVersion()), null, 4)}\n`;
}

if (require.main === module) {
    const out = process.argv[2] ?? join(ROOT, "schema.json");
    writeFileSync(out, schemaText());
    console.log(`wrote ${out}`);
}
