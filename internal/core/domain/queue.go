package domain

// QueueMessage is one message of a queue's batch, as the use cases see it:
// its id (to report it for redelivery) and its body.
type QueueMessage struct {
	ID   string
	Body string
}
