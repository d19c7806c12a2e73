// Command memcached-exporter is a stand-in for quay.io/prometheus/memcached-exporter
// on hosts that reach neither a container registry nor that exporter's Go module
// (the module proxy answers 403 for github.com/prometheus/memcached_exporter here).
//
// It reads memcached's `stats` over TCP on every scrape and serves them on /metrics in
// Prometheus' text format, under the real exporter's metric names and labels for what
// it covers: memcached_up, memcached_version{version}, memcached_commands_total
// {command,status} (the same hit/miss/badval split, and set minus cas as upstream
// counts it), connections, items, bytes and uptime. It takes the real exporter's two
// flags the memcached role passes (--memcached.address, --web.listen-address).
// Standard library only, so it builds offline; hack/node/memcached-exporter.sh packs it.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// plain maps a `stats` key to a metric that has no labels.
type plain struct {
	stat, name, kind, help string
}

var plainMetrics = []plain{
	{"uptime", "memcached_uptime_seconds", "counter", "Number of seconds since the server started."},
	{"time", "memcached_time_seconds", "gauge", "current UNIX time according to the server."},
	{"curr_connections", "memcached_current_connections", "gauge", "Current number of open connections."},
	{"total_connections", "memcached_connections_total", "counter", "Total number of connections opened since the server started running."},
	{"curr_items", "memcached_current_items", "gauge", "Current number of items stored by this instance."},
	{"total_items", "memcached_items_total", "counter", "Total number of items stored during the life of this instance."},
	{"bytes", "memcached_current_bytes", "gauge", "Current number of bytes used to store items."},
	{"limit_maxbytes", "memcached_limit_bytes", "gauge", "Number of bytes this server is allowed to use for storage."},
	{"bytes_read", "memcached_read_bytes_total", "counter", "Total number of bytes read by this server from network."},
	{"bytes_written", "memcached_written_bytes_total", "counter", "Total number of bytes sent by this server to network."},
	{"evictions", "memcached_items_evicted_total", "counter", "Total number of valid items removed from cache to free memory for new items."},
	{"reclaimed", "memcached_items_reclaimed_total", "counter", "Total number of times an entry was stored using memory from an expired entry."},
}

// stats asks memcached at address for `stats` and returns its STAT lines as a map.
func stats(address string, timeout time.Duration) (map[string]string, error) {
	conn, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte("stats\r\n")); err != nil {
		return nil, err
	}
	found := map[string]string{}
	scanner := bufio.NewScanner(conn)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "END" {
			return found, nil
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) != 3 || fields[0] != "STAT" {
			return nil, fmt.Errorf("unexpected answer to stats: %q", line)
		}
		found[fields[1]] = fields[2]
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("stats ended without END")
}

func number(s map[string]string, key string) (float64, bool) {
	value, ok := s[key]
	if !ok {
		return 0, false
	}
	parsed, err := strconv.ParseFloat(value, 64)
	return parsed, err == nil
}

func escape(value string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(value)
}

// render writes the metrics of one scrape; s is nil when memcached did not answer.
func render(out *strings.Builder, s map[string]string) {
	header := func(name, kind, help string) {
		fmt.Fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	}
	header("memcached_up", "gauge", "Could the memcached server be reached.")
	if s == nil {
		out.WriteString("memcached_up 0\n")
		return
	}
	out.WriteString("memcached_up 1\n")
	header("memcached_version", "gauge", "The version of this memcached server.")
	fmt.Fprintf(out, "memcached_version{version=\"%s\"} 1\n", escape(s["version"]))

	header("memcached_commands_total", "counter",
		"Total number of all requests broken down by command (get, set, etc.) and status.")
	command := func(stat, cmd, status string) {
		if v, ok := number(s, stat); ok {
			fmt.Fprintf(out, "memcached_commands_total{command=%q,status=%q} %g\n", cmd, status, v)
		}
	}
	for _, op := range []string{"get", "delete", "incr", "decr", "cas", "touch"} {
		command(op+"_hits", op, "hit")
		command(op+"_misses", op, "miss")
	}
	command("cas_badval", "cas", "badval")
	command("cmd_flush", "flush", "hit")
	// memcached counts cas commands in cmd_set too; upstream reports set without them.
	if set, ok := number(s, "cmd_set"); ok {
		for _, key := range []string{"cas_misses", "cas_hits", "cas_badval"} {
			cas, _ := number(s, key)
			set -= cas
		}
		fmt.Fprintf(out, "memcached_commands_total{command=\"set\",status=\"hit\"} %g\n", set)
	}

	for _, m := range plainMetrics {
		if v, ok := number(s, m.stat); ok {
			header(m.name, m.kind, m.help)
			fmt.Fprintf(out, "%s %g\n", m.name, v)
		}
	}
}

func main() {
	address := flag.String("memcached.address", "localhost:11211", "memcached server address")
	timeout := flag.Duration("memcached.timeout", time.Second, "memcached read/write timeout")
	listen := flag.String("web.listen-address", ":9150", "address to serve /metrics on")
	path := flag.String("web.telemetry-path", "/metrics", "path under which to expose metrics")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc(*path, func(w http.ResponseWriter, r *http.Request) {
		s, err := stats(*address, *timeout)
		if err != nil {
			log.Printf("scraping %s: %v", *address, err)
			s = nil
		}
		var out strings.Builder
		render(&out, s)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(out.String()))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "memcached exporter (stand-in): metrics at %s\n", *path)
	})
	server := &http.Server{
		Addr:              *listen,
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	// A pod's SIGTERM ends the exporter cleanly (exit 0), not as a killed process.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	}()
	log.Printf("serving %s on %s for memcached at %s", *path, *listen, *address)
	if err := server.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
