// Command k8s is a multicall binary holding the Kubernetes components the
// embedded control plane needs. It picks the component from the name it is
// invoked under (bin/k8s/<version>/kube-apiserver is a symlink to it), so the
// large shared dependency set is compiled and linked once instead of four times.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // CronJob time zone support, as upstream's mains do

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	// "k8s <component> args..." works too, for callers that cannot symlink.
	if name == "k8s" && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	var command *cobra.Command
	switch name {
	case "kube-apiserver":
		command = apiserver.NewAPIServerCommand()
	case "kube-controller-manager":
		command = controllermanager.NewControllerManagerCommand()
	case "kube-scheduler":
		command = scheduler.NewSchedulerCommand()
	case "kubectl":
		logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) //nolint:errcheck
		command = kubectlcmd.NewDefaultKubectlCommand()
		if err := cli.RunNoErrOutput(command); err != nil {
			kubectlutil.CheckErr(err)
		}
		return
	default:
		fmt.Fprintf(os.Stderr, "k8s: unknown component %q (want kube-apiserver, kube-controller-manager, kube-scheduler or kubectl)\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(command))
}
