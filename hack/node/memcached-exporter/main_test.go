package main

import (
	"strings"
	"testing"
)

func TestRenderNamesAndLabelsAsUpstream(t *testing.T) {
	var out strings.Builder
	render(&out, map[string]string{
		"version": "1.6.38", "get_hits": "3", "get_misses": "1", "cmd_set": "7",
		"cas_hits": "1", "cas_misses": "1", "cas_badval": "1", "curr_connections": "2",
		"curr_items": "4",
	})
	for _, want := range []string{
		"memcached_up 1\n",
		"memcached_version{version=\"1.6.38\"} 1\n",
		"memcached_commands_total{command=\"get\",status=\"hit\"} 3\n",
		"memcached_commands_total{command=\"get\",status=\"miss\"} 1\n",
		"memcached_commands_total{command=\"cas\",status=\"badval\"} 1\n",
		"memcached_commands_total{command=\"set\",status=\"hit\"} 4\n",
		"memcached_current_connections 2\n",
		"memcached_current_items 4\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("expected %q in:\n%s", want, out.String())
		}
	}
}

func TestRenderDownWhenMemcachedDoesNotAnswer(t *testing.T) {
	var out strings.Builder
	render(&out, nil)
	if !strings.Contains(out.String(), "memcached_up 0\n") || strings.Contains(out.String(), "commands") {
		t.Errorf("expected only memcached_up 0, saw:\n%s", out.String())
	}
}
