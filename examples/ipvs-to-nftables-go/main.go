// The ipvs -> nftables migration of examples/ipvs-to-nftables/index.ts, as a Go program.
//
// It uses the generated Go SDK (sdk/go, package kubeproxymode; go.mod points at it with a
// replace directive) and the kube-proxy-mode provider plugin (pulumi-resource-kube-proxy-mode);
// see README.md:
//
//	pulumi config set --secret kubeconfig "$(cat kubeconfig)" && pulumi preview --diff && pulumi up
//
// `pools` and `verify` may be overridden with stack config (objects, as JSON, camelCase keys).
package main

import (
	kpm "github.com/kube-proxy-mode/kube-proxy-mode/sdk/go/kubeproxymode"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")

		mode := kpm.ProxyModeNFTABLES
		if m := cfg.Get("mode"); m != "" {
			mode = kpm.ProxyMode(m)
		}
		pools := kpm.PoolArray{
			kpm.PoolArgs{Name: pulumi.String("canary"), NodeSelector: pulumi.String("pool=canary"),
				MaxUnavailable: pulumi.Int(1), Soak: pulumi.String("10m")},
			kpm.PoolArgs{Name: pulumi.String("workers"), NodeSelector: pulumi.String("pool=workers"),
				MaxUnavailable: pulumi.Int(2), Drain: kpm.PoolDrainArgs{}},
			kpm.PoolArgs{Name: pulumi.String("batch"), NodeSelector: pulumi.String("pool=batch"),
				MaxUnavailable: pulumi.Int(1)},
		}
		var fromConfig []kpm.Pool
		if err := cfg.TryObject("pools", &fromConfig); err == nil {
			pools = kpm.PoolArray{}
			for _, p := range fromConfig {
				pools = append(pools, kpm.PoolArgs{Name: pulumi.String(p.Name),
					NodeSelector: pulumi.String(p.NodeSelector), MaxUnavailable: pulumi.IntPtrFromPtr(p.MaxUnavailable),
					Soak: pulumi.StringPtrFromPtr(p.Soak)})
			}
		}
		var verify kpm.VerifyPtrInput = kpm.VerifyArgs{Service: pulumi.String("demo/backend")}
		var verifyConfig kpm.Verify
		if err := cfg.TryObject("verify", &verifyConfig); err == nil {
			verify = kpm.VerifyArgs{Service: pulumi.StringPtrFromPtr(verifyConfig.Service),
				NodeChecks: pulumi.BoolPtrFromPtr(verifyConfig.NodeChecks)}
		}

		kp, err := kpm.NewKubeProxyMode(ctx, "kube-proxy", &kpm.KubeProxyModeArgs{
			Mode:              mode,
			NodePortAddresses: pulumi.StringArray{pulumi.String("0.0.0.0/0")}, // keep the NodePort reach ipvs mode had
			Conntrack:         kpm.ConntrackArgs{TcpBeLiberal: pulumi.Bool(true)},
			Target:            kpm.TargetArgs{Flavor: kpm.FlavorKUBEADM},
			Pools:             pools,
			Verify:            verify,
			OnFailure:         kpm.OnFailure_ROLLBACK_NODE,
			Kubeconfig:        cfg.RequireSecret("kubeconfig"),
		})
		if err != nil {
			return err
		}

		ctx.Export("configDiff", kp.ConfigDiff)
		ctx.Export("plan", kp.Plan)
		ctx.Export("findings", kp.Findings)
		ctx.Export("status", kp.Status)
		return nil
	})
}
