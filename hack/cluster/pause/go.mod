module playbook-operator/hack/cluster/pause

go 1.26.0
