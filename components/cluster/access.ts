// Which cluster, as the component and the CLI are told it: plain data, no client library types
// (this type is part of the package's public declarations).
export interface ClusterAccess {
    /** path to a kubeconfig file; default: $KUBECONFIG or ~/.kube/config */
    kubeconfig?: string;
    /** kubeconfig content (for example a Pulumi secret); wins over the path */
    kubeconfigContent?: string;
    context?: string;
}
