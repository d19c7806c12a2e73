// Command etcd wraps etcd's server entry point so that etcd 3.6 can be built
// from the Go module proxy: etcd's own server module carries relative replace
// directives that `go install` rejects, while a dependency's replaces are
// ignored here and the published api/client/pkg modules are used instead.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
