package apiview

// Account is the answer of GET /api/account: the caller's account.
type Account struct {
	UserID    string          `json:"user_id"`
	Plan      string          `json:"plan"`
	Balance   string          `json:"balance"`
	Held      string          `json:"held"`
	RateLimit RateLimit       `json:"rate_limit"`
	Usage     Usage           `json:"usage"`
	Webhooks  AccountWebhooks `json:"webhooks"`
	Outputs   AccountOutputs  `json:"outputs"`
}

// AccountOutputs says how long the account's outputs are kept.
type AccountOutputs struct {
	RetentionDays int `json:"retention_days"`
}

// RateLimit is the account's request limit.
type RateLimit struct {
	RequestsPerMinute int `json:"requests_per_minute"`
}

// Usage is what the account spent this calendar month (UTC).
type Usage struct {
	Month   string `json:"month"`
	Credits string `json:"credits"`
	Jobs    int    `json:"jobs"`
}

// AccountWebhooks carries the secret that signs the account's webhooks:
// null unless the caller is an API key with the admin scope.
type AccountWebhooks struct {
	SigningSecret *string `json:"signing_secret"`
}

// RotatedWebhookSecret is the answer of POST
// /api/account/webhook-secret/rotate: the new secret, shown this once.
type RotatedWebhookSecret struct {
	SigningSecret string `json:"signing_secret"`
	RotatedAt     string `json:"rotated_at"`
}

// Transaction is one entry of GET /api/account/transactions: one movement of
// credits. Amount is its size; BalanceChange and HeldChange are what it did
// to the balance and the held credits (signed), so the balance changes of a
// time range sum to the balance's change over it. BalanceAfter and HeldAfter
// are those of the entry's purse (domain.JournalEntry says why an account
// has purses): the account's own are the sum over its purses.
type Transaction struct {
	ID            string  `json:"id"`
	Purse         int     `json:"purse"`
	Type          string  `json:"type"`
	Amount        string  `json:"amount"`
	BalanceChange string  `json:"balance_change"`
	HeldChange    string  `json:"held_change"`
	BalanceAfter  string  `json:"balance_after"`
	HeldAfter     string  `json:"held_after"`
	WorkID        *string `json:"work_id"`
	WorkType      *string `json:"work_type"`
	Model         *string `json:"model"`
	KeyPrefix     *string `json:"key_prefix"`
	GrantID       *string `json:"grant_id"`
	CreatedAt     string  `json:"created_at"`
}

// UsageReport is the answer of GET /api/account/usage: what the captures of
// the UTC days from From to To (inclusive) added up to, grouped.
type UsageReport struct {
	From    string       `json:"from"`
	To      string       `json:"to"`
	GroupBy string       `json:"group_by"`
	Total   UsageTotals  `json:"total"`
	Groups  []UsageGroup `json:"groups"`
}

// UsageTotals are credits captured and the works they paid for.
type UsageTotals struct {
	Credits     string `json:"credits"`
	Generations int    `json:"generations"`
	Videos      int    `json:"videos"`
}

// UsageGroup is one day, model or key of a UsageReport.
type UsageGroup struct {
	Key string `json:"key"`
	UsageTotals
}
