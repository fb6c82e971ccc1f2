package dynamostore

// Access is one kind of request a method of Store makes: an IAM action of
// DynamoDB on a table of Tables (by field name) or on one of its indexes. A
// transaction's items count by their own actions (PutItem, UpdateItem,
// DeleteItem), as IAM checks them; a paginator's pages are Query or Scan.
type Access struct {
	Action string // "GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"
	Table  string // "Accounts", "Ledger", … (a field of Tables)
	Index  string // an index of the table, for a Query on it
}

func get(t string) Access          { return Access{"GetItem", t, ""} }
func batchGet(t string) Access     { return Access{"BatchGetItem", t, ""} }
func put(t string) Access          { return Access{"PutItem", t, ""} }
func update(t string) Access       { return Access{"UpdateItem", t, ""} }
func del(t string) Access          { return Access{"DeleteItem", t, ""} }
func query(t, index string) Access { return Access{"Query", t, index} }

// Accesses declares every request each method of Store can make, every
// branch included. The adapter's tests check it against the requests the
// methods make under the conformance suite (both ways: nothing made that is
// not declared, nothing declared that is never made); the deploy tests turn
// it, with the methods each Lambda function's code can reach, into the
// function's DynamoDB permissions.
var Accesses = map[string][]Access{
	"CreateAccount":      {put("Accounts")},
	"GetAccount":         {get("Accounts"), query("Ledger", "")},
	"GetAccountHeader":   {get("Accounts")},
	"SetOutputRetention": {update("Accounts")},

	// Every ledger write reads a purse and writes it (the account item or
	// a purse item of the ledger), its own items and the journal entries
	// (purses.go, journal.go).
	"Grant":        {get("Accounts"), put("Ledger"), update("Accounts")},
	"Hold":         {get("Accounts"), query("Ledger", ""), update("Accounts"), put("Ledger"), get("Ledger"), update("Ledger")},
	"Capture":      {get("Ledger"), update("Ledger"), update("Accounts"), get("Accounts"), put("Ledger")},
	"Release":      {get("Ledger"), update("Ledger"), update("Accounts"), get("Accounts"), put("Ledger")},
	"Refund":       {get("Ledger"), update("Ledger"), update("Accounts"), get("Accounts"), put("Ledger")},
	"OpenHolds":    {query("Ledger", IndexOpenHolds)},
	"AccountHolds": {get("Accounts"), query("Ledger", "")},

	"JournalEntries": {query("Ledger", "")},
	"UsageCounts":    {query("Ledger", "")},
	"KeySpend":       {query("Ledger", "")},
	"AccountIDs":     {{"Scan", "Accounts", ""}}, // mediagen ledger verify only

	"PutAPIKey":    {put("APIKeys")},
	"GetAPIKey":    {get("APIKeys")},
	"RevokeAPIKey": {query("APIKeys", indexKeyPrefix), update("APIKeys")},
	"ListAPIKeys":  {query("APIKeys", indexKeyUser)},
	"TouchAPIKey":  {update("APIKeys")},

	"CreateGeneration":      {update("Counters"), put("Generations")},
	"GetGeneration":         {get("Generations")},
	"GetGenerationByID":     {query("Generations", indexUserGenerationID), get("Generations")},
	"SetUpstreamJobs":       {update("Generations"), get("Generations")},
	"FinishGeneration":      {update("Generations"), get("Generations")},
	"ClaimGenerationFinish": {update("Generations"), get("Generations")},
	"SetGenerationProgress": {update("Generations"), get("Generations")},
	"ProcessingGenerations": {{"Scan", "Generations", ""}, batchGet("Generations")}, // local runtime only (restart.go)
	"ListGenerations":       {query("Generations", indexUserCreatedAt), batchGet("Generations")},
	"ClaimPoll":             {update("Generations"), get("Generations")},
	"SetGenerationRemoval":  {update("Generations"), get("Generations")},

	"CreateLongVideo":      {put("LongVideos")},
	"GetLongVideo":         {get("LongVideos")},
	"FinishLongVideo":      {update("LongVideos"), get("LongVideos")},
	"ClaimLongVideoFinish": {update("LongVideos"), get("LongVideos")},
	"ProcessingLongVideos": {{"Scan", "LongVideos", ""}, batchGet("LongVideos")}, // local runtime only (restart.go)
	"ListLongVideos":       {query("LongVideos", indexUserCreatedAt), batchGet("LongVideos")},
	"SetSceneStatus":       {update("LongVideos"), get("LongVideos")},
	"SetLongVideoRemoval":  {update("LongVideos"), get("LongVideos")},
	"BeginRegenerate":      {update("LongVideos"), get("LongVideos")},
	"SetRegenerateState":   {update("LongVideos"), get("LongVideos")},
	"EndRegenerate":        {update("LongVideos"), get("LongVideos")}, // with texts apart, both updates in one TransactWriteItems

	"CountRequest": {update("RateLimits")},
	"OpenStream":   {get("RateLimits"), update("RateLimits")},
	"HoldsStream":  {get("RateLimits")},
	"CloseStream":  {update("RateLimits")},

	"EnsureWebhookSecret": {update("Accounts")},
	"SetWebhookSecret":    {update("Accounts")},
	"AddWebhookAttempt":   {update("Generations"), update("LongVideos")},

	"ClaimIdempotencyKey":   {put("Idempotency"), get("Idempotency")},
	"FinishIdempotencyKey":  {update("Idempotency")},
	"ReleaseIdempotencyKey": {del("Idempotency")},

	"AcquireSlot":       {get("Slots"), query("Slots", indexSlotWait), update("Slots"), put("Slots"), query("Slots", ""), del("Slots")},
	"ReleaseSlot":       {get("Slots"), del("Slots"), update("Slots")},
	"SlotQueuePosition": {get("Slots"), query("Slots", indexSlotWait)},
	"SlotsInUse":        {get("Slots")},
}
