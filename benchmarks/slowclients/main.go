// Command slowclients measures a well-behaved client of `gleaner serve`
// while other connections stall request bodies and hold idle connections:
// the hostile probe's two lock-out attacks, on loopback.
//
//	go run ./benchmarks/slowclients --addr 127.0.0.1:8090 --index wiki
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "the server")
	index := flag.String("index", "wiki", "index name")
	stalled := flag.Int("stalled", 257, "connections that send half a body, then nothing")
	idle := flag.Int("idle", 19000, "connections that send nothing")
	n := flag.Int("requests", 500, "well-behaved requests in each phase")
	flag.Parse()
	body := []byte(fmt.Sprintf(`{"index":%q,"query":"Who leads the team that owns the ledger?","method":"bm25","k":5}`, *index))
	c := &http.Client{Timeout: 30 * time.Second}
	fmt.Printf("baseline:     %s\n", phase(c, *addr, body, *n))
	var held []net.Conn
	for range *stalled {
		conn, err := net.Dial("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"index\":")
		held = append(held, conn)
	}
	failed := 0
	for range *idle {
		conn, err := net.Dial("tcp", *addr)
		if err != nil {
			failed++
			continue
		}
		held = append(held, conn)
	}
	fmt.Printf("held %d stalled bodies and %d idle connections (%d dials failed)\n", *stalled, *idle-failed, failed)
	fmt.Printf("under attack: %s\n", phase(c, *addr, body, *n))
	for _, conn := range held {
		conn.Close()
	}
}

// phase sends n requests one at a time and summarises their statuses and
// latencies.
func phase(c *http.Client, addr string, body []byte, n int) string {
	var ms []float64
	ok := 0
	codes := map[string]int{}
	for range n {
		start := time.Now()
		resp, err := c.Post("http://"+addr+"/v1/retrieve", "application/json", bytes.NewReader(body))
		if err != nil {
			codes["error"]++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		codes[resp.Status]++
		if resp.StatusCode == http.StatusOK {
			ok++
		}
	}
	slices.Sort(ms)
	q := func(p float64) float64 {
		if len(ms) == 0 {
			return 0
		}
		return ms[min(len(ms)-1, int(p*float64(len(ms))))]
	}
	return fmt.Sprintf("%d/%d 200 (%.1f%%), p50 %.2f ms, p99 %.2f ms, statuses %v", ok, n, 100*float64(ok)/float64(n), q(0.5), q(0.99), codes)
}
