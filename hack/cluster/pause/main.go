// Command pause is the sandbox ("pause") container of the embedded cluster's real
// node: it holds a pod's namespaces open and does nothing else. No registry is
// reachable here, so registry.k8s.io/pause cannot be pulled; devcluster builds this
// static binary and packs it into an image under that name (devcluster/images.py).
// Like upstream's pause.c it exits on SIGINT/SIGTERM and reaps orphans it inherits.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
