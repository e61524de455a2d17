module github.com/kube-proxy-mode/kube-proxy-mode/sdk/go

go 1.24

require github.com/pulumi/pulumi/sdk/v3 v3.276.0
