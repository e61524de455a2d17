// The rollout's own ConfigMaps and DaemonSets are named by configuration hash, so no Role written
// in advance can name them for delete: they are owned by one ConfigMap of a fixed name, and the
// finish deletes that one and lets the garbage collector remove them. Against a SIMULATED API
// server whose garbage collector removes an object once its owner is gone.
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { configHash, MARKS, ROLLOUT_OWNER } from "../../components/core/plan.js";
import { answer, clusterOn, failure, listenSimulated, withBody } from "./simulatedApi.js";

type Obj = { kind: "ConfigMap" | "DaemonSet"; metadata: k8s.V1ObjectMeta; [k: string]: unknown };

async function simulatedKubeSystem(objects: Obj[]) {
    const requests: { method: string; path: string; query: string; body?: any }[] = [];
    let uids = 0;
    let lists = 0;
    /** the garbage collector: objects whose owner is gone, removed on the second list after it went */
    let collectAt: number | undefined;
    const collect = () => {
        if (collectAt === undefined || lists < collectAt) return;
        const uids = new Set(objects.map((o) => o.metadata.uid));
        for (const o of [...objects])
            if (o.metadata.ownerReferences?.length && !o.metadata.ownerReferences.some((r) => uids.has(r.uid)))
                objects.splice(objects.indexOf(o), 1);
    };
    const server = await listenSimulated((req, res) => {
        withBody(req, (raw) => {
            const url = new URL(req.url ?? "/", "http://sim");
            const body = raw ? JSON.parse(raw) : undefined;
            requests.push({ method: req.method ?? "", path: url.pathname, query: url.search, body });
            const m =
                /^\/apis?\/(?:apps\/)?v1\/namespaces\/kube-system\/(configmaps|daemonsets|controllerrevisions)(?:\/([^/]+))?$/.exec(
                    url.pathname,
                );
            if (!m) return answer(res, 404, failure(404, "NotFound"));
            if (m[1] === "controllerrevisions") return answer(res, 200, { metadata: {}, items: [] });
            const kind = m[1] === "configmaps" ? "ConfigMap" : "DaemonSet";
            const mine = objects.filter((o) => o.kind === kind);
            if (!m[2] && req.method === "GET") {
                lists++;
                collect();
                const wanted = (url.searchParams.get("labelSelector") ?? "").split(",").filter(Boolean);
                const items = objects
                    .filter((o) => o.kind === kind)
                    .filter((o) =>
                        wanted.every((w) => {
                            const [k, v] = w.split("=");
                            const has = o.metadata.labels?.[k];
                            return v === undefined ? has !== undefined : has === v;
                        }),
                    );
                return answer(res, 200, { metadata: {}, items });
            }
            if (!m[2] && req.method === "POST") {
                if (mine.some((o) => o.metadata.name === body.metadata.name))
                    return answer(res, 409, failure(409, "AlreadyExists"));
                const o = { ...body, kind, metadata: { ...body.metadata, uid: `uid-${++uids}` } };
                objects.push(o);
                return answer(res, 201, o);
            }
            const o = mine.find((x) => x.metadata.name === m[2]);
            if (!o) return answer(res, 404, failure(404, "NotFound"));
            if (req.method === "GET") return answer(res, 200, o);
            if (req.method === "DELETE") {
                objects.splice(objects.indexOf(o), 1);
                collectAt = lists + 2;
                return answer(res, 200, o);
            }
            answer(res, 405, failure(405, "MethodNotAllowed"));
        });
    });
    return { ...server, requests, objects };
}

const TARGET = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: "nftables"\n';
const HASH = configHash(TARGET);
const INSTALLER_SPEC = {
    selector: { matchLabels: { "k8s-app": "kube-proxy" } },
    template: {
        metadata: { labels: { "k8s-app": "kube-proxy" } },
        spec: {
            containers: [
                { name: "kube-proxy", volumeMounts: [{ name: "kube-proxy", mountPath: "/var/lib/kube-proxy" }] },
            ],
            volumes: [{ name: "kube-proxy", configMap: { name: "kube-proxy" } }],
        },
    },
};

function installer(inRollout: boolean): Obj[] {
    return [
        {
            kind: "ConfigMap",
            metadata: { name: "kube-proxy", namespace: "kube-system", uid: "uid-cm" },
            data: { "config.conf": TARGET.replace("nftables", "ipvs") },
        },
        {
            kind: "DaemonSet",
            metadata: {
                name: "kube-proxy",
                namespace: "kube-system",
                uid: "uid-ds",
                labels: { "k8s-app": "kube-proxy" },
                ...(inRollout
                    ? { annotations: { [MARKS.originalSpecAnnotation]: JSON.stringify(INSTALLER_SPEC) } }
                    : {}),
            },
            spec: INSTALLER_SPEC,
        },
    ];
}

describe("the rollout's ConfigMaps and DaemonSets go with their owner (SIMULATED API server)", () => {
    it("prepare makes them owned by the ConfigMap kube-proxy-mode-rollout, which it creates once", async () => {
        const sim = await simulatedKubeSystem(installer(true));
        try {
            const cluster = clusterOn(sim.url);
            await cluster.prepare({ hash: HASH, config: TARGET }, () => undefined);
            const owner = sim.objects.find((o) => o.metadata.name === ROLLOUT_OWNER)!;
            assert.ok(owner, "the owner exists");
            assert.equal(owner.metadata.labels?.[MARKS.configLabel], undefined, "the owner is no rollout object");
            for (const name of [`kube-proxy-${HASH}`]) {
                for (const kind of ["ConfigMap", "DaemonSet"]) {
                    const o = sim.objects.find((x) => x.kind === kind && x.metadata.name === name)!;
                    assert.deepEqual(
                        o.metadata.ownerReferences,
                        [{ apiVersion: "v1", kind: "ConfigMap", name: ROLLOUT_OWNER, uid: owner.metadata.uid }],
                        `${kind} ${name}`,
                    );
                }
            }
            // a second run finds the owner and the objects there
            await cluster.prepare({ hash: HASH, config: TARGET }, () => undefined);
            assert.equal(sim.objects.filter((o) => o.metadata.name === ROLLOUT_OWNER).length, 1);
        } finally {
            await sim.close();
        }
    });

    it("the finish deletes the owner only (no DaemonSet by name), waits for the garbage collector, and names each object removed", async () => {
        const sim = await simulatedKubeSystem(installer(true));
        try {
            const cluster = clusterOn(sim.url);
            await cluster.prepare({ hash: HASH, config: TARGET }, () => undefined);
            // the restore's last write landed (a run that died right after it): the saved spec is gone
            delete sim.objects.find((o) => o.kind === "DaemonSet" && o.metadata.name === "kube-proxy")!.metadata
                .annotations;
            const said: string[] = [];
            await cluster.restoreInstallation((l) => said.push(l));
            const deletes = sim.requests.filter((r) => r.method === "DELETE");
            assert.deepEqual(
                deletes.map((d) => d.path),
                [`/api/v1/namespaces/kube-system/configmaps/${ROLLOUT_OWNER}`],
            );
            assert.equal(
                deletes[0].body?.propagationPolicy ?? new URLSearchParams(deletes[0].query).get("propagationPolicy"),
                "Background",
            );
            assert.deepEqual(sim.objects.map((o) => `${o.kind} ${o.metadata.name}`).sort(), [
                "ConfigMap kube-proxy",
                "DaemonSet kube-proxy",
            ]);
            assert.deepEqual(said, [
                `DaemonSet kube-system/kube-proxy-${HASH}: deleted`,
                `ConfigMap kube-system/kube-proxy-${HASH}: deleted`,
            ]);
        } finally {
            await sim.close();
        }
    });

    it("a DaemonSet an earlier version made without the owner is deleted by name", async () => {
        const legacy: Obj = {
            kind: "DaemonSet",
            metadata: {
                name: "kube-proxy-0ld",
                namespace: "kube-system",
                uid: "uid-legacy",
                labels: { [MARKS.managedByLabel]: MARKS.managedByValue, [MARKS.configLabel]: "0ld" },
            },
        };
        const sim = await simulatedKubeSystem([...installer(false), legacy]);
        try {
            const said: string[] = [];
            await clusterOn(sim.url).restoreInstallation((l) => said.push(l));
            assert.deepEqual(
                sim.requests.filter((r) => r.method === "DELETE").map((d) => d.path),
                [
                    "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy-0ld",
                    `/api/v1/namespaces/kube-system/configmaps/${ROLLOUT_OWNER}`,
                ],
            );
            assert.deepEqual(said, ["DaemonSet kube-system/kube-proxy-0ld: deleted"]);
        } finally {
            await sim.close();
        }
    });
});
