// What the identity running the rollout may do, asked of the cluster's own authorizers before
// the rollout writes anything, so a missing permission is named up front rather than mid-node.
import * as k8s from "../libraries/kubernetesClient.js";
import type { Access, AccessReview } from "../core/rbac.js";
import { eachAtMost, type KubeProxyClient } from "./kubeProxyClient.js";

/** How many SelfSubjectAccessReviews are in flight at once. */
const ACCESS_REVIEWS_AT_ONCE = 8;

export class AccessReviews {
    constructor(private readonly client: KubeProxyClient) {}

    private authorizationApi?: k8s.AuthorizationV1Api;

    /** One SelfSubjectAccessReview per access, a few at a time; the denied ones, in their order. */
    async denied(wanted: Access[]): Promise<AccessReview> {
        const api = (this.authorizationApi ??= this.client.api(k8s.AuthorizationV1Api));
        const refused = new Set<Access>();
        await eachAtMost(ACCESS_REVIEWS_AT_ONCE, wanted, async (a) => {
            const review = await api.createSelfSubjectAccessReview({
                body: {
                    apiVersion: "authorization.k8s.io/v1",
                    kind: "SelfSubjectAccessReview",
                    spec: { resourceAttributes: { ...a } },
                },
            });
            if (review.status?.allowed !== true) refused.add(a);
        });
        const denied = wanted.filter((a) => refused.has(a));
        if (!denied.length) return { denied };
        // who is denied, for the message (a cluster that will not say is not an error)
        const user = await this.client
            .api(k8s.AuthenticationV1Api)
            .createSelfSubjectReview({
                body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
            })
            .then((r) => r.status?.userInfo?.username)
            .catch(() => undefined);
        return { user, denied };
    }
}
