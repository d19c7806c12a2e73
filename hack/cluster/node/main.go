// Command k8s-node is a multicall binary holding the two Kubernetes components a
// real node runs beside a container runtime: kubelet and kube-proxy. It picks the
// component from the name it is invoked under (bin/k8s/<version>/kubelet is a
// symlink to it), as hack/cluster/k8s does for the control plane. It is a separate
// binary so that clusters without a real node (the default) never build it.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	// "k8s-node <component> args..." works too, for callers that cannot symlink.
	if name == "k8s-node" && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	var command *cobra.Command
	switch name {
	case "kubelet":
		command = kubelet.NewKubeletCommand(context.Background())
	case "kube-proxy":
		command = proxy.NewProxyCommand()
	default:
		fmt.Fprintf(os.Stderr, "k8s-node: unknown component %q (want kubelet or kube-proxy)\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(command))
}
