package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Tables names the tables of one deployment. The template creates them and
// passes their names to the functions in these environment variables.
type Tables struct {
	Accounts    string
	APIKeys     string
	Generations string
	LongVideos  string
	RateLimits  string
	Counters    string
	Idempotency string
	// Ledger holds the accounts' holds and grants, an item each.
	Ledger string
	// Slots holds the upstreams' concurrency slots, an item per holder.
	Slots string
}

// Environment variables read by TablesFromEnv.
const (
	envAccountsTable    = "ACCOUNTS_TABLE"
	envAPIKeysTable     = "API_KEYS_TABLE"
	envGenerationsTable = "GENERATIONS_TABLE"
	envLongVideosTable  = "LONG_VIDEOS_TABLE"
	envRateLimitsTable  = "RATE_LIMITS_TABLE"
	envCountersTable    = "COUNTERS_TABLE"
	envIdempotencyTable = "IDEMPOTENCY_TABLE"
	envLedgerTable      = "LEDGER_TABLE"
	envSlotsTable       = "SLOTS_TABLE"
)

// Index names the code queries; the template declares the same.
const (
	indexKeyPrefix = "prefix-index"
	indexKeyUser   = "user-index"
	// indexUserGenerationID finds an account's generation by its integer
	// id, which counts per account.
	indexUserGenerationID = "user-id-index"
	indexUserCreatedAt    = "user-created-index"
	// IndexOpenHolds is the ledger's sparse index of open holds: only a
	// hold's item carries open_shard, and only while it is open.
	IndexOpenHolds = "open-holds-index"
	// indexSlotWait is the slots table's sparse local index of waiters, in
	// the order they are served.
	indexSlotWait = "wait-index"
)

// TTLAttribute names each table's time-to-live attribute (Unix seconds),
// by table name; the template and CreateTables enable it, the code never
// does at run time.
func TTLAttribute(t Tables) map[string]string {
	return map[string]string{t.RateLimits: "expires_at", t.Idempotency: "expires_at", t.Ledger: "expires_at", t.Slots: "expires_at"}
}

// TablesWithPrefix names every table "<prefix>-<name>".
func TablesWithPrefix(prefix string) Tables {
	return Tables{
		Accounts:    prefix + "-accounts",
		APIKeys:     prefix + "-api-keys",
		Generations: prefix + "-generations",
		LongVideos:  prefix + "-long-videos",
		RateLimits:  prefix + "-rate-limits",
		Counters:    prefix + "-counters",
		Idempotency: prefix + "-idempotency",
		Ledger:      prefix + "-ledger",
		Slots:       prefix + "-slots",
	}
}

// TablesFromEnv reads the table names from the environment, falling back to
// the "mediagen-" names for each one not set.
func TablesFromEnv(getenv func(string) string) Tables {
	t := TablesWithPrefix("mediagen")
	for _, v := range []struct {
		dst *string
		env string
	}{
		{&t.Accounts, envAccountsTable}, {&t.APIKeys, envAPIKeysTable}, {&t.Generations, envGenerationsTable},
		{&t.LongVideos, envLongVideosTable}, {&t.RateLimits, envRateLimitsTable}, {&t.Counters, envCountersTable},
		{&t.Idempotency, envIdempotencyTable}, {&t.Ledger, envLedgerTable}, {&t.Slots, envSlotsTable},
	} {
		if s := getenv(v.env); s != "" {
			*v.dst = s
		}
	}
	return t
}

// TableCreator is the part of the DynamoDB API that CreateTables uses.
type TableCreator interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	dynamodb.DescribeTableAPIClient
}

// CreateTables creates the tables and enables their TTL, for a DynamoDB the
// template does not manage (tests, moto's server, `mediagen tables
// create`). In AWS the template creates them with the same schema and TTL.
func CreateTables(ctx context.Context, c TableCreator, t Tables) error {
	for _, in := range Schema(t) {
		if _, err := c.CreateTable(ctx, in); err != nil {
			var inUse *types.ResourceInUseException
			if errors.As(err, &inUse) {
				continue
			}
			return fmt.Errorf("create table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	waiter := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, time.Second
	})
	for _, in := range Schema(t) {
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, time.Minute); err != nil {
			return fmt.Errorf("wait for table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	for table, attr := range TTLAttribute(t) {
		d, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("read the TTL of %s: %w", table, err)
		}
		// A table made before keeps the TTL it has (enabling twice is refused).
		if ttl := d.TimeToLiveDescription; ttl != nil && ttl.TimeToLiveStatus != types.TimeToLiveStatusDisabled && ttl.TimeToLiveStatus != "" {
			continue
		}
		_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("enable the TTL of %s: %w", table, err)
		}
	}
	return nil
}

// Schema is the key schema and indexes of every table.
func Schema(t Tables) []*dynamodb.CreateTableInput {
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	n := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeN}
	}
	hash := func(name string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(name), KeyType: types.KeyTypeHash}}
	}
	hashRange := func(h, r string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(h), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(r), KeyType: types.KeyTypeRange},
		}
	}
	gsi := func(name string, keys []types.KeySchemaElement, p types.ProjectionType) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: keys,
			Projection: &types.Projection{ProjectionType: p}}
	}
	lsi := func(name string, keys []types.KeySchemaElement, p types.ProjectionType) types.LocalSecondaryIndex {
		return types.LocalSecondaryIndex{IndexName: aws.String(name), KeySchema: keys,
			Projection: &types.Projection{ProjectionType: p}}
	}
	table := func(name string, attrs []types.AttributeDefinition, key []types.KeySchemaElement, gsis ...types.GlobalSecondaryIndex) *dynamodb.CreateTableInput {
		in := &dynamodb.CreateTableInput{TableName: aws.String(name), AttributeDefinitions: attrs, KeySchema: key,
			BillingMode: types.BillingModePayPerRequest}
		if len(gsis) > 0 {
			in.GlobalSecondaryIndexes = gsis
		}
		return in
	}
	return []*dynamodb.CreateTableInput{
		table(t.Accounts, []types.AttributeDefinition{s("user_id")}, hash("user_id")),
		table(t.APIKeys, []types.AttributeDefinition{s("key_hash"), s("prefix"), s("user_id")}, hash("key_hash"),
			gsi(indexKeyPrefix, hash("prefix"), types.ProjectionTypeKeysOnly),
			gsi(indexKeyUser, hash("user_id"), types.ProjectionTypeAll)),
		// The lists' indexes hold keys only, which never change: an index
		// projecting a record is written again each time the record changes.
		table(t.Generations, []types.AttributeDefinition{s("uuid"), n("id"), s("user_id"), s("created_at")}, hash("uuid"),
			gsi(indexUserGenerationID, hashRange("user_id", "id"), types.ProjectionTypeKeysOnly),
			gsi(indexUserCreatedAt, hashRange("user_id", "created_at"), types.ProjectionTypeKeysOnly)),
		table(t.LongVideos, []types.AttributeDefinition{s("id"), s("user_id"), s("created_at")}, hash("id"),
			gsi(indexUserCreatedAt, hashRange("user_id", "created_at"), types.ProjectionTypeKeysOnly)),
		table(t.RateLimits, []types.AttributeDefinition{s("key")}, hash("key")),
		table(t.Counters, []types.AttributeDefinition{s("name")}, hash("name")),
		table(t.Idempotency, []types.AttributeDefinition{s("pk")}, hash("pk")),
		table(t.Ledger, []types.AttributeDefinition{s("user_id"), s("entry"), s("open_shard"), s("created_at")}, hashRange("user_id", "entry"),
			gsi(IndexOpenHolds, hashRange("open_shard", "created_at"), types.ProjectionTypeAll)),
		withLSI(table(t.Slots, []types.AttributeDefinition{s("upstream"), s("entry"), s("wait_key")}, hashRange("upstream", "entry")),
			lsi(indexSlotWait, hashRange("upstream", "wait_key"), types.ProjectionTypeKeysOnly)),
	}
}

func withLSI(in *dynamodb.CreateTableInput, lsis ...types.LocalSecondaryIndex) *dynamodb.CreateTableInput {
	in.LocalSecondaryIndexes = lsis
	return in
}
