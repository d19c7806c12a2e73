// Command kstatus prints the kstatus status of Kubernetes objects, as Flux, Argo CD's
// kstatus-based checks and `kpt live status` compute it (sigs.k8s.io/cli-utils'
// pkg/kstatus/status, the library itself). A test helper: tests pipe objects in and
// compare the status with what they expect.
//
// Input on standard input: one JSON object, a JSON list of objects, or a Kubernetes
// List (`kubectl get -o json`). Output on standard output: one JSON line per object,
// {"name", "namespace", "status", "message"}, in the order read. Exit status 2 when
// the input is not JSON objects, 1 when kstatus could not compute a status.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Status    string `json:"status"`
	Message   string `json:"message"`
}

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kstatus: reading standard input:", err)
		os.Exit(2)
	}
	objects, err := decode(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kstatus:", err)
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	for _, obj := range objects {
		u := &unstructured.Unstructured{Object: obj}
		result, err := status.Compute(u)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: %s/%s: %v\n", u.GetNamespace(), u.GetName(), err)
			os.Exit(1)
		}
		v := verdict{u.GetName(), u.GetNamespace(), result.Status.String(), result.Message}
		if err := out.Encode(v); err != nil {
			fmt.Fprintln(os.Stderr, "kstatus: writing:", err)
			os.Exit(1)
		}
	}
}

// decode reads one object, a list of objects or a Kubernetes List. Numbers become int64
// where they are whole (apimachinery's JSON), as unstructured objects hold them.
func decode(data []byte) ([]map[string]interface{}, error) {
	var many []interface{}
	if err := utiljson.Unmarshal(data, &many); err == nil {
		return objects(many)
	}
	var one map[string]interface{}
	if err := utiljson.Unmarshal(data, &one); err != nil {
		return nil, fmt.Errorf("expected a JSON object or list of objects: %w", err)
	}
	if items, ok := one["items"].([]interface{}); ok {
		return objects(items)
	}
	return []map[string]interface{}{one}, nil
}

func objects(items []interface{}) ([]map[string]interface{}, error) {
	list := make([]map[string]interface{}, 0, len(items))
	for i, item := range items {
		obj, ok := item.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("item %d is not an object", i)
		}
		list = append(list, obj)
	}
	return list, nil
}
