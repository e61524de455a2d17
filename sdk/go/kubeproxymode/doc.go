// Move Kubernetes clusters between kube-proxy modes safely: previewed, pool-by-pool, verified, resumable.
package kubeproxymode
