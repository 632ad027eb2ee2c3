// Package remotetest serves S3 on loopback for tests and benchmarks: an
// in-process gofakes3 server, and a proxy in front of any server that
// adds latency and injects faults (delays, dropped connections, cut and
// corrupted bodies).
package remotetest

import (
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is an in-process S3 server on loopback.
type Server struct {
	URL     string // http://127.0.0.1:port
	Backend *s3mem.Backend
	ts      *httptest.Server
}

// NewServer starts a server holding the buckets named.
func NewServer(buckets ...string) (*Server, error) {
	be := s3mem.New()
	faker := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog()))
	ts := httptest.NewUnstartedServer(faker.Server())
	// A client that gives up on a body (a read-ahead cut short by
	// Close) makes gofakes3 write a second header, which net/http logs.
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.Start()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			ts.Close()
			return nil, err
		}
	}
	return &Server{URL: ts.URL, Backend: be, ts: ts}, nil
}

// Close stops the server.
func (s *Server) Close() { s.ts.Close() }

// Fault is what the proxy does to one request.
type Fault int

// The faults.
const (
	Pass      Fault = iota // forward as is (after Latency)
	Delay                  // wait up to MaxDelay more first
	Drop                   // close the connection without a response
	Truncate               // send the headers and part of the body, then close
	Corrupt                // flip one byte of the body
	Status                 // answer 503 Slow Down
	Stall                  // send the headers and part of the body, then nothing
	DropAfter              // forward the request, then close the connection without the response
	nFaults
)

func (f Fault) String() string {
	return [...]string{"pass", "delay", "drop", "truncate", "corrupt", "status", "stall", "dropafter"}[f]
}

// Proxy forwards HTTP to a target, adding Latency to every request and,
// with probability Rate, one fault drawn from Faults.
type Proxy struct {
	URL string // http://127.0.0.1:port

	mu       sync.Mutex
	target   string
	latency  time.Duration
	rate     float64
	faults   []Fault
	maxDelay time.Duration
	rng      *rand.Rand
	filter   func(*http.Request) bool

	ts       *httptest.Server
	client   *http.Client
	Requests atomic.Int64
	Injected [nFaults]atomic.Int64
}

// NewProxy starts a proxy in front of target (http://host:port).
func NewProxy(target string) *Proxy {
	p := &Proxy{target: target, rng: rand.New(rand.NewPCG(1, 2)),
		client: &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}}}
	p.ts = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.ts.URL
	return p
}

// Close stops the proxy, ending the connections it holds.
func (p *Proxy) Close() {
	p.ts.CloseClientConnections()
	p.ts.Close()
}

// SetLatency sets the delay added before every request is forwarded.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// SetFaults makes a request suffer one of faults with probability rate,
// drawn from a generator seeded with seed; a Delay waits up to maxDelay.
func (p *Proxy) SetFaults(seed uint64, rate float64, maxDelay time.Duration, faults ...Fault) {
	p.mu.Lock()
	p.rng = rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	p.rate, p.faults, p.maxDelay = rate, faults, maxDelay
	p.mu.Unlock()
}

// SetFilter limits faults to the requests filter accepts (nil: all).
func (p *Proxy) SetFilter(filter func(*http.Request) bool) {
	p.mu.Lock()
	p.filter = filter
	p.mu.Unlock()
}

func (p *Proxy) draw(r *http.Request) (Fault, time.Duration, time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := Pass
	if len(p.faults) > 0 && (p.filter == nil || p.filter(r)) && p.rng.Float64() < p.rate {
		f = p.faults[p.rng.IntN(len(p.faults))]
	}
	var d time.Duration
	if f == Delay && p.maxDelay > 0 {
		d = time.Duration(p.rng.Int64N(int64(p.maxDelay)))
	}
	return f, p.latency, d, p.rng.IntN(1 << 30)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.Requests.Add(1)
	f, lat, d, x := p.draw(r)
	p.Injected[f].Add(1)
	if wait := lat + d; wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if f == Drop {
		hijackClose(w)
		return
	}
	if f == Status {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>injected</Message></Error>`)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	req.Host = r.Host
	req.ContentLength = r.ContentLength
	resp, err := p.client.Do(req)
	if err != nil {
		hijackClose(w)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || f == DropAfter {
		hijackClose(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	switch {
	case f == Truncate && len(body) > 0:
		w.WriteHeader(resp.StatusCode)
		w.Write(body[:x%len(body)])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		hijackClose(w)
		return
	case f == Stall && len(body) > 0:
		w.WriteHeader(resp.StatusCode)
		w.Write(body[:x%len(body)])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done() // until the client gives up, or Close
		return
	case f == Corrupt && len(body) > 0:
		body = append([]byte(nil), body...)
		body[x%len(body)] ^= 1 << (x % 8)
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// hijackClose ends the connection under w without another byte.
func hijackClose(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if buf != nil {
		buf.Flush()
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
