// A production-shaped Service load for the reference cluster: N selectorless Services, each with
// one EndpointSlice of M endpoints, so kube-proxy on the real nodes programs rules of that size.
// The endpoints route nowhere (the addresses are in a range no pod uses): kube-proxy writes the
// same rules for them, and only the demo and backend Services are meant to answer.
import * as k8s from "@kubernetes/client-node";

export const LOAD_NAMESPACE = "load";

export interface ServiceLoad {
    services: number;
    endpointsPerService: number;
}

/** The endpoint addresses: 10.128.0.0/10 holds 4M, room for 45,000 Services x 90 endpoints. */
const ENDPOINT_BASE = (10 << 24) | (128 << 16);
const ENDPOINT_SPAN = 1 << 22;
/** kube-apiserver's default NodePort range holds 2,768 ports: a load with more NodePorts widens it. */
export const DEFAULT_NODE_PORTS = 32767 - 30000 + 1;

/** Checks the load's figures, naming the option and the bound. */
export function checkServiceLoad(load: ServiceLoad): ServiceLoad {
    if (!Number.isInteger(load.services) || load.services < 0 || load.services > 45_000)
        throw new Error(`--services ${load.services}: a whole number from 0 to 45000`);
    if (!Number.isInteger(load.endpointsPerService) || load.endpointsPerService < 1 || load.endpointsPerService > 90)
        throw new Error(`--endpoints-per-service ${load.endpointsPerService}: a whole number from 1 to 90`);
    return load;
}

/** How many of the load's Services are NodePorts: one in three, as on the clusters the issue reports. */
export function nodePortCount(services: number): number {
    return Math.ceil(services / 3);
}

/** The kube-apiserver flag that makes room for the load's NodePorts, when the default is too small. */
export function nodePortRangeFlag(load: ServiceLoad | undefined): string[] {
    const needed = load ? nodePortCount(load.services) : 0;
    // the demo workload's own NodePorts and headroom for tests: 1,000 more than the load asks
    if (needed + 1000 <= DEFAULT_NODE_PORTS) return [];
    return [`--service-node-port-range=30000-${30000 + needed + 1000 - 1}`];
}

function ipv4(n: number): string {
    return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join(".");
}

/**
 * Service `index` of the load and its EndpointSlice. One Service in three is a NodePort, and one
 * NodePort in two has `externalTrafficPolicy: Local` (kube-proxy writes a separate rule set for
 * it). Single-stack IPv4: the reference cluster has no IPv6 service range.
 */
export function loadObjects(
    index: number,
    endpointsPerService: number,
): { service: k8s.V1Service; slice: k8s.V1EndpointSlice } {
    const name = `load-${String(index).padStart(5, "0")}`;
    const nodePort = index % 3 === 0;
    const service: k8s.V1Service = {
        metadata: { name, namespace: LOAD_NAMESPACE },
        spec: {
            type: nodePort ? "NodePort" : "ClusterIP",
            ...(nodePort && index % 6 === 0 ? { externalTrafficPolicy: "Local" } : {}),
            ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
        },
    };
    const first = index * endpointsPerService;
    if (first + endpointsPerService > ENDPOINT_SPAN) throw new Error(`Service ${index}: out of endpoint addresses`);
    const slice: k8s.V1EndpointSlice = {
        metadata: {
            name: `${name}-1`,
            namespace: LOAD_NAMESPACE,
            labels: {
                "kubernetes.io/service-name": name,
                "endpointslice.kubernetes.io/managed-by": "kube-proxy-mode-reference-cluster",
            },
        },
        addressType: "IPv4",
        endpoints: Array.from({ length: endpointsPerService }, (_, j) => ({
            addresses: [ipv4(ENDPOINT_BASE + first + j)],
            conditions: { ready: true },
        })),
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    };
    return { service, slice };
}

/** Creates the load, `parallel` requests at a time; returns the seconds it took. */
export async function seedServiceLoad(
    kc: k8s.KubeConfig,
    load: ServiceLoad,
    log: (line: string) => void,
    parallel = 32,
): Promise<number> {
    const started = Date.now();
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
    await core.createNamespace({ body: { metadata: { name: LOAD_NAMESPACE } } });
    let next = 0;
    let done = 0;
    const worker = async (): Promise<void> => {
        while (next < load.services) {
            const { service, slice } = loadObjects(next++, load.endpointsPerService);
            await core.createNamespacedService({ namespace: LOAD_NAMESPACE, body: service });
            await discovery.createNamespacedEndpointSlice({ namespace: LOAD_NAMESPACE, body: slice });
            // a line per 10%, never one per Service
            if (++done % Math.max(1, Math.ceil(load.services / 10)) === 0 && done < load.services)
                log(`services: ${done} of ${load.services}`);
        }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, load.services) }, worker));
    const seconds = (Date.now() - started) / 1000;
    log(
        `services: ${load.services} with ${load.endpointsPerService} endpoints each in namespace ${LOAD_NAMESPACE}, ` +
            `${nodePortCount(load.services)} of them NodePorts, created in ${seconds.toFixed(1)}s`,
    );
    return seconds;
}
