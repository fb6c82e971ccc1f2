package prod

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/ledger"
	"github.com/mediagen-dev/mediagen/shared/longstory"
)

type stepsT = *longstory.Steps

func lookupService(cfg aws.Config, log *slog.Logger) *generation.Service {
	return &generation.Service{Store: Store(cfg), Log: log}
}

// Functions builds the handler of each function under functions/, by its
// folder name. Each builds only what its handler uses.
var Functions = map[string]func(ctx context.Context, log *slog.Logger) (any, error){
	"generate": func(ctx context.Context, log *slog.Logger) (any, error) {
		svc, cfg, err := GenerationService(ctx, log, false)
		if err != nil {
			return nil, err
		}
		return (&httpapi.Generations{Service: svc, Gate: Gate(cfg, log)}).Generate(), nil
	},
	"status": func(ctx context.Context, log *slog.Logger) (any, error) {
		cfg, err := AWSConfig(ctx)
		if err != nil {
			return nil, err
		}
		// A lookup needs only the store: no upstream token, queue or bucket.
		return (&httpapi.Generations{Service: lookupService(cfg, log), Gate: Gate(cfg, log)}).Status(), nil
	},
	"poller": func(ctx context.Context, log *slog.Logger) (any, error) {
		svc, _, err := GenerationService(ctx, log, true)
		if err != nil {
			return nil, err
		}
		return svc.HandleSQS, nil
	},
	"authorizer": func(ctx context.Context, log *slog.Logger) (any, error) {
		cfg, err := AWSConfig(ctx)
		if err != nil {
			return nil, err
		}
		return Gate(cfg, log).Authorize, nil
	},
	"sweeper": func(ctx context.Context, log *slog.Logger) (any, error) {
		cfg, err := AWSConfig(ctx)
		if err != nil {
			return nil, err
		}
		sweeper := &ledger.Sweeper{Store: Store(cfg), Log: log}
		return func(ctx context.Context, _ events.EventBridgeEvent) (ledger.SweepReport, error) {
			return sweeper.Sweep(ctx)
		}, nil
	},
	"models": func(ctx context.Context, log *slog.Logger) (any, error) {
		prices, err := Prices() // the public catalog needs no AWS configuration
		if err != nil {
			return nil, err
		}
		return (&httpapi.Models{Prices: prices, Log: log}).List(), nil
	},
	"longstory-estimate":     longStoryRoute(false, (*httpapi.LongStories).Estimate),
	"longstory-create":       longStoryRoute(true, (*httpapi.LongStories).Create),
	"longstory-status":       longStoryRoute(false, (*httpapi.LongStories).Status),
	"longstory-submit-scene": step(StepNeeds{Upstream: true}, func(s stepsT) any { return s.SubmitScene }),
	"longstory-check-scene":  step(StepNeeds{Upstream: true, Copier: true}, func(s stepsT) any { return s.CheckScene }),
	"longstory-narrate":      step(StepNeeds{Files: true, Narrator: true}, func(s stepsT) any { return s.Narrate }),
	"longstory-assemble":     step(StepNeeds{Files: true}, func(s stepsT) any { return s.Assemble }),
	"longstory-finalize":     step(StepNeeds{Files: true, Store: true}, func(s stepsT) any { return s.Finalize }),
	"longstory-fail":         step(StepNeeds{Store: true}, func(s stepsT) any { return s.MarkFailed }),
}

// Handler builds the named function's handler.
func Handler(ctx context.Context, name string) (any, error) {
	build, ok := Functions[name]
	if !ok {
		return nil, fmt.Errorf("no function %q", name)
	}
	return build(ctx, Logger().With("function", name))
}

// FunctionNames lists the registry, sorted.
func FunctionNames() []string {
	names := make([]string, 0, len(Functions))
	for n := range Functions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func longStoryRoute(withWorkflow bool, route func(*httpapi.LongStories) httpapi.Handler) func(context.Context, *slog.Logger) (any, error) {
	return func(ctx context.Context, log *slog.Logger) (any, error) {
		cfg, err := AWSConfig(ctx)
		if err != nil {
			return nil, err
		}
		svc, err := LongStoryService(cfg, log, withWorkflow)
		if err != nil {
			return nil, err
		}
		return route(&httpapi.LongStories{Service: svc, Gate: Gate(cfg, log)}), nil
	}
}

func step(needs StepNeeds, pick func(stepsT) any) func(context.Context, *slog.Logger) (any, error) {
	return func(ctx context.Context, log *slog.Logger) (any, error) {
		s, err := Steps(ctx, log, needs)
		if err != nil {
			return nil, err
		}
		return pick(s), nil
	}
}

// ReadsEnvironment builds the named function with a stand-in environment
// that answers every variable, and reports the variables it read. It swaps
// Getenv, so it is for tests and tools, one at a time.
func ReadsEnvironment(ctx context.Context, name string) ([]string, error) {
	read := map[string]bool{}
	saved := Getenv
	Getenv = func(k string) string {
		read[k] = true
		if k == EnvPriceFile {
			return "" // the embedded price file
		}
		return "https://example.invalid/" + k
	}
	defer func() { Getenv = saved }()
	if _, err := Handler(ctx, name); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(read))
	for k := range read {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}
