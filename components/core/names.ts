// Kubernetes object names as the API server validates them (apimachinery's validation package):
// a name the API would refuse is refused here first, before it is put into a request path.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]+$/;

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export type NameKind = "label" | "subdomain" | "service";

/** A DNS-1123 label (namespaces): at most 63 characters. */
export function isDnsLabel(value: string): boolean {
    return value.length <= 63 && DNS1123_LABEL.test(value);
}

/** A DNS-1035 label (Service names): a DNS-1123 label that starts with a letter. */
export function isServiceName(value: string): boolean {
    return value.length <= 63 && DNS1035_LABEL.test(value);
}

/** A DNS-1123 subdomain (most object names, nodes): at most 253 characters, dot-separated label-shaped parts. */
export function isDnsSubdomain(value: string): boolean {
    return value.length <= 253 && value.split(".").every((part) => DNS1123_LABEL.test(part));
}

/** What a name of `kind` may be, for error messages. */
export function nameRule(kind: NameKind): string {
    switch (kind) {
        case "label":
            return "a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)";
        case "service":
            return "a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit, at most 63 characters)";
        case "subdomain":
            return "a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', each dot-separated part starting and ending with a letter or digit, at most 253 characters)";
    }
}

/** Why `value` is not a `what` name of `kind` (e.g. "namespace", "label"), or undefined when it is one. */
export function nameProblem(value: string, what: string, kind: NameKind): string | undefined {
    const ok = { label: isDnsLabel, service: isServiceName, subdomain: isDnsSubdomain }[kind](value);
    return ok ? undefined : `${JSON.stringify(value)} is not a ${what} name: ${nameRule(kind)}`;
}

/** Why `value` is not a ConfigMap data key, or undefined when it is one. */
export function configMapKeyProblem(value: string): string | undefined {
    // the API also refuses a key starting with ".." (hasChDirPrefix: the kubelet's ..data links)
    return value.length <= 253 && CONFIG_MAP_KEY.test(value) && value !== "." && !value.startsWith("..")
        ? undefined
        : `${JSON.stringify(value)} is not a ConfigMap key: letters, digits, '-', '_' and '.', at most 253 characters, not "." and not starting with ".."`;
}
