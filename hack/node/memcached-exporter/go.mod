module playbook-operator.local/memcached-exporter

go 1.22
