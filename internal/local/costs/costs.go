// Package costs counts, in the local runtime, the billed AWS requests the
// deployed system would make for the same work: API Gateway requests, Lambda
// invocations and their compute, DynamoDB read and write units, SQS
// requests, Step Functions state transitions and S3 requests. Each counter
// sits at a local adapter's boundary (the API Gateway stand-in, the
// DynamoDB client when the runtime runs on DynamoDB, the in-process queue,
// the ASL runner, the object store's HTTP server), so the counts follow the
// code that runs, not a model of it. Local only.
package costs

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
)

// Counts are the billed units of some work. DynamoDB units are on-demand
// read and write request units.
type counts struct {
	APIRequests       int64   `json:"api_requests"`
	LambdaInvocations int64   `json:"lambda_invocations"`
	LambdaGBSeconds   float64 `json:"lambda_gb_seconds"`
	DynamoDBReadUnits float64 `json:"dynamodb_read_units"`
	DynamoDBWriteUnit float64 `json:"dynamodb_write_units"`
	// DynamoDBRequests counts the requests themselves, whose number sets
	// a route's latency (each is a round trip), not its price.
	DynamoDBRequests int64 `json:"dynamodb_requests"`
	SQSRequests      int64 `json:"sqs_requests"`
	StateTransitions int64 `json:"state_transitions"`
	S3PutRequests    int64 `json:"s3_put_requests"` // PUT, POST, COPY, LIST: the $0.005 per 1,000 class
	S3GetRequests    int64 `json:"s3_get_requests"` // GET, HEAD: the $0.0004 per 1,000 class
	// Invocations by function, for reading where the cost comes from.
	ByFunction map[string]int64 `json:"lambda_invocations_by_function,omitempty"`
}

// Sub is c − o, for the counts of one stretch of work.
func (c counts) Sub(o counts) counts {
	d := counts{
		APIRequests: c.APIRequests - o.APIRequests, LambdaInvocations: c.LambdaInvocations - o.LambdaInvocations,
		LambdaGBSeconds: c.LambdaGBSeconds - o.LambdaGBSeconds, DynamoDBReadUnits: c.DynamoDBReadUnits - o.DynamoDBReadUnits,
		DynamoDBWriteUnit: c.DynamoDBWriteUnit - o.DynamoDBWriteUnit, DynamoDBRequests: c.DynamoDBRequests - o.DynamoDBRequests,
		SQSRequests:      c.SQSRequests - o.SQSRequests,
		StateTransitions: c.StateTransitions - o.StateTransitions, S3PutRequests: c.S3PutRequests - o.S3PutRequests,
		S3GetRequests: c.S3GetRequests - o.S3GetRequests, ByFunction: map[string]int64{},
	}
	for k, v := range c.ByFunction {
		if n := v - o.ByFunction[k]; n != 0 {
			d.ByFunction[k] = n
		}
	}
	return d
}

// Per divides every count by n (per generation, per video).
func (c counts) Per(n float64) PerUnit {
	return PerUnit{
		APIRequests: float64(c.APIRequests) / n, LambdaInvocations: float64(c.LambdaInvocations) / n,
		LambdaGBSeconds: c.LambdaGBSeconds / n, DynamoDBReadUnits: c.DynamoDBReadUnits / n,
		DynamoDBWriteUnits: c.DynamoDBWriteUnit / n, SQSRequests: float64(c.SQSRequests) / n,
		StateTransitions: float64(c.StateTransitions) / n, S3PutRequests: float64(c.S3PutRequests) / n,
		S3GetRequests: float64(c.S3GetRequests) / n,
	}
}

// PerUnit are counts averaged over some units of work.
type PerUnit struct {
	APIRequests        float64 `json:"api_requests"`
	LambdaInvocations  float64 `json:"lambda_invocations"`
	LambdaGBSeconds    float64 `json:"lambda_gb_seconds"`
	DynamoDBReadUnits  float64 `json:"dynamodb_read_units"`
	DynamoDBWriteUnits float64 `json:"dynamodb_write_units"`
	SQSRequests        float64 `json:"sqs_requests"`
	StateTransitions   float64 `json:"state_transitions"`
	S3PutRequests      float64 `json:"s3_put_requests"`
	S3GetRequests      float64 `json:"s3_get_requests"`
}

// Add is p + o.
func (p PerUnit) Add(o PerUnit) PerUnit {
	return PerUnit{
		APIRequests: p.APIRequests + o.APIRequests, LambdaInvocations: p.LambdaInvocations + o.LambdaInvocations,
		LambdaGBSeconds: p.LambdaGBSeconds + o.LambdaGBSeconds, DynamoDBReadUnits: p.DynamoDBReadUnits + o.DynamoDBReadUnits,
		DynamoDBWriteUnits: p.DynamoDBWriteUnits + o.DynamoDBWriteUnits, SQSRequests: p.SQSRequests + o.SQSRequests,
		StateTransitions: p.StateTransitions + o.StateTransitions, S3PutRequests: p.S3PutRequests + o.S3PutRequests,
		S3GetRequests: p.S3GetRequests + o.S3GetRequests,
	}
}

// Scale is p × k.
func (p PerUnit) Scale(k float64) PerUnit {
	return PerUnit{
		APIRequests: p.APIRequests * k, LambdaInvocations: p.LambdaInvocations * k, LambdaGBSeconds: p.LambdaGBSeconds * k,
		DynamoDBReadUnits: p.DynamoDBReadUnits * k, DynamoDBWriteUnits: p.DynamoDBWriteUnits * k,
		SQSRequests: p.SQSRequests * k, StateTransitions: p.StateTransitions * k,
		S3PutRequests: p.S3PutRequests * k, S3GetRequests: p.S3GetRequests * k,
	}
}

// milli is the fixed-point scale of the unit counters.
const milli = 1000

// Meter accumulates counts; safe for concurrent use. The zero value counts.
type Meter struct {
	api, invocations, sqs, transitions, s3put, s3get, ddbRequests atomic.Int64
	// gbMicro is GB-seconds × 1e6; rcu and wcu are units × 1000.
	gbMicro, rcu, wcu atomic.Int64

	mu         sync.Mutex
	byFunction map[string]int64
	seconds    map[string]float64
}

// Seconds is the time the named function's invocations took so far.
func (m *Meter) Seconds(function string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seconds[function]
}

// Snapshot reads the counts so far.
func (m *Meter) Snapshot() counts {
	m.mu.Lock()
	by := make(map[string]int64, len(m.byFunction))
	for k, v := range m.byFunction {
		by[k] = v
	}
	m.mu.Unlock()
	return counts{
		APIRequests: m.api.Load(), LambdaInvocations: m.invocations.Load(),
		LambdaGBSeconds: float64(m.gbMicro.Load()) / 1e6, DynamoDBReadUnits: float64(m.rcu.Load()) / milli,
		DynamoDBWriteUnit: float64(m.wcu.Load()) / milli, DynamoDBRequests: m.ddbRequests.Load(), SQSRequests: m.sqs.Load(),
		StateTransitions: m.transitions.Load(), S3PutRequests: m.s3put.Load(), S3GetRequests: m.s3get.Load(),
		ByFunction: by,
	}
}

// MarshalJSON writes the snapshot.
func (m *Meter) MarshalJSON() ([]byte, error) { return json.Marshal(m.Snapshot()) }

// AddTransitions counts Step Functions state transitions (the ASL runner
// counts them per execution).
func (m *Meter) AddTransitions(n int) { m.transitions.Add(int64(n)) }

// invocation counts one Lambda invocation of the named function, billed at
// its memory size for the time it ran, rounded up to the millisecond as
// Lambda bills. The duration is the local one; a deployed function also
// waits on the network for each AWS call, which the price sheet adds
// (NetworkAllowance).
func (m *Meter) invocation(function string, took time.Duration) {
	m.invocations.Add(1)
	ms := (took + time.Millisecond - 1) / time.Millisecond
	mb := MemoryMB(function)
	m.gbMicro.Add(int64(ms) * int64(mb) * 1e6 / 1024 / 1000)
	m.mu.Lock()
	if m.byFunction == nil {
		m.byFunction, m.seconds = map[string]int64{}, map[string]float64{}
	}
	m.byFunction[function]++
	m.seconds[function] += took.Seconds()
	m.mu.Unlock()
}

// MemoryMB is each function's memory size in template.yaml (256 MB unless
// the template says otherwise).
func MemoryMB(function string) int {
	switch function {
	case "poller", "upstream-webhook", "narrate":
		return 512
	case "assemble":
		return 3008
	}
	return 256
}

// invocationClock times one invocation, less the time its handler waited
// on a DynamoDB server over the network (the runtime on DynamoDB): a
// deployed function's wait on AWS is priced by NetworkAllowance instead,
// and an emulator's (and the meter's own size reads) would inflate it.
type invocationClock struct {
	start  time.Time
	waited atomic.Int64
}

type clockKey struct{}

func startInvocation(ctx context.Context) (context.Context, *invocationClock) {
	c := &invocationClock{start: time.Now()}
	return context.WithValue(ctx, clockKey{}, c), c
}

// billed is the invocation's time so far less its waits, at least zero.
func (c *invocationClock) billed() time.Duration {
	return max(0, time.Since(c.start)-time.Duration(c.waited.Load()))
}

// waitedSince adds the time since start to the invocation's waits.
func waitedSince(ctx context.Context, start time.Time) {
	if c, ok := ctx.Value(clockKey{}).(*invocationClock); ok {
		c.waited.Add(int64(time.Since(start)))
	}
}

func (m *Meter) read(units float64)  { m.rcu.Add(int64(units * milli)) }
func (m *Meter) write(units float64) { m.wcu.Add(int64(units * milli)) }
