package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

// The slots table keeps each upstream's slots under its name, with no item
// that grows with the holders or the waiters:
//
//	entry "#counter"      in_use: the slots taken
//	entry "h#<holder>"    state holding, or state waiting with wait_key
//	                      "<since>#<holder>", which puts the waiter in the
//	                      sparse wait-index (an LSI, read consistently) in
//	                      the order waiters are served
//
// Taking a slot is one transaction of the counter (in_use < limit) and the
// holder's item; joining the wait list and leaving it write the holder's
// item alone. The rules are store.SlotState's: a holder keeps its slot, a
// new holder takes a free slot only when no one waits ahead of it, and
// waiters take free slots in the order of their wait keys.
const (
	slotCounter  = "#counter"
	slotHolder   = "h#"
	slotHolding  = "holding"
	slotWaiting  = "waiting"
	slotAttempts = 25
)

func slotKey(upstream, entry string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"upstream": strAV(upstream), "entry": strAV(entry)}
}

func waitKey(since time.Time, holder string) string { return formatTime(since) + "#" + holder }

type slotHolderState struct {
	state   string // "", holding or waiting
	at      time.Time
	waitKey string
}

func (s *Store) slotHolder(ctx context.Context, upstream, holder string) (slotHolderState, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotHolder+holder), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return slotHolderState{}, fmt.Errorf("read slot of %s at %s: %w", holder, upstream, err)
	}
	st := slotHolderState{state: stringAttr(out.Item, "state"), waitKey: stringAttr(out.Item, "wait_key")}
	if st.at, err = parseTime(stringAttr(out.Item, "at")); err != nil {
		return slotHolderState{}, err
	}
	return st, nil
}

// SlotsInUse reads the upstream's counter.
func (s *Store) SlotsInUse(ctx context.Context, upstream string) (int, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotCounter), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("read slots of %s: %w", upstream, err)
	}
	v, ok := out.Item["in_use"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		return 0, fmt.Errorf("slots of %s: stored count %q: %w", upstream, v.Value, err)
	}
	return n, nil
}

// waitersAhead counts the waiters whose wait key sorts before key, up to
// limit (0: all of them), from the wait-index.
func (s *Store) waitersAhead(ctx context.Context, upstream, key string, limit int) (int, error) {
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.tables.Slots), IndexName: aws.String(IndexSlotWait),
		KeyConditionExpression:    aws.String("upstream = :u AND wait_key < :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": strAV(upstream), ":k": strAV(key)},
		Select:                    types.SelectCount, ConsistentRead: aws.Bool(true),
	}
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
	}
	n := 0
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("count waiters at %s: %w", upstream, err)
		}
		n += int(out.Count)
		if out.LastEvaluatedKey == nil || (limit > 0 && n >= limit) {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func (s *Store) AcquireSlot(ctx context.Context, upstream, holder string, limit int, at time.Time) (bool, error) {
	for attempt := 0; attempt < slotAttempts; attempt++ {
		me, err := s.slotHolder(ctx, upstream, holder)
		if err != nil {
			return false, err
		}
		if me.state == slotHolding {
			return true, nil
		}
		waiting := me.state == slotWaiting
		mine := waitKey(at, holder)
		if waiting {
			mine = me.waitKey
		}
		inUse, err := s.SlotsInUse(ctx, upstream)
		if err != nil {
			return false, err
		}
		if free := limit - inUse; free > 0 {
			ahead, err := s.waitersAhead(ctx, upstream, mine, free)
			if err != nil {
				return false, err
			}
			if ahead < free {
				took, err := s.takeSlot(ctx, upstream, holder, limit, at, waiting, mine)
				if err != nil {
					return false, err
				}
				if took {
					return true, nil
				}
				continue // the counter or the holder changed meanwhile: decide again
			}
		}
		if waiting {
			return false, nil
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.tables.Slots),
			Item: map[string]types.AttributeValue{"upstream": strAV(upstream), "entry": strAV(slotHolder + holder),
				"state": strAV(slotWaiting), "at": strAV(formatTime(at)), "wait_key": strAV(mine)},
			ConditionExpression: aws.String("attribute_not_exists(entry)"),
		})
		if err == nil {
			return false, nil
		}
		if !isConditionFailed(err) {
			return false, fmt.Errorf("wait for a slot at %s: %w", upstream, err)
		}
		// Another call for the same holder wrote first: decide again.
	}
	return false, fmt.Errorf("slots of %s kept changing over %d attempts: %w", upstream, slotAttempts, domain.ErrConflict)
}

// takeSlot adds one to the counter under the limit and makes the holder's
// item a holding one, together; false when either changed meanwhile.
func (s *Store) takeSlot(ctx context.Context, upstream, holder string, limit int, at time.Time, waiting bool, mine string) (bool, error) {
	cond, values := "attribute_not_exists(entry)", map[string]types.AttributeValue{}
	if waiting {
		cond = "#st = :waiting AND wait_key = :mine"
		values = map[string]types.AttributeValue{":waiting": strAV(slotWaiting), ":mine": strAV(mine)}
	}
	put := &types.Put{
		TableName: aws.String(s.tables.Slots),
		Item: map[string]types.AttributeValue{"upstream": strAV(upstream), "entry": strAV(slotHolder + holder),
			"state": strAV(slotHolding), "at": strAV(formatTime(at))},
		ConditionExpression: aws.String(cond),
	}
	if waiting {
		put.ExpressionAttributeNames = map[string]string{"#st": "state"}
		put.ExpressionAttributeValues = values
	}
	err := s.transact(ctx,
		types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(s.tables.Slots),
			Key:                       slotKey(upstream, slotCounter),
			UpdateExpression:          aws.String("SET in_use = if_not_exists(in_use, :zero) + :one"),
			ConditionExpression:       aws.String("attribute_not_exists(in_use) OR in_use < :limit"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":zero": intAV(0), ":one": intAV(1), ":limit": intAV(int64(limit))},
		}},
		types.TransactWriteItem{Put: put})
	if err == nil {
		return true, nil
	}
	if reasons := cancelReasons(err); reasons != nil {
		failedCounter, _ := conditionFailed(reasons, 0)
		failedHolder, _ := conditionFailed(reasons, 1)
		if failedCounter || failedHolder {
			return false, nil
		}
	}
	return false, fmt.Errorf("take a slot at %s: %w", upstream, err)
}

func (s *Store) ReleaseSlot(ctx context.Context, upstream, holder string) error {
	for attempt := 0; attempt < slotAttempts; attempt++ {
		me, err := s.slotHolder(ctx, upstream, holder)
		if err != nil {
			return err
		}
		switch me.state {
		case "":
			return nil
		case slotWaiting:
			_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotHolder+holder),
				ConditionExpression:       aws.String("#st = :waiting"),
				ExpressionAttributeNames:  map[string]string{"#st": "state"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":waiting": strAV(slotWaiting)},
			})
			if err == nil {
				return nil
			}
			if !isConditionFailed(err) {
				return fmt.Errorf("leave the wait list at %s: %w", upstream, err)
			}
		default:
			err = s.transact(ctx,
				types.TransactWriteItem{Delete: &types.Delete{
					TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotHolder+holder),
					ConditionExpression:       aws.String("#st = :holding"),
					ExpressionAttributeNames:  map[string]string{"#st": "state"},
					ExpressionAttributeValues: map[string]types.AttributeValue{":holding": strAV(slotHolding)},
				}},
				types.TransactWriteItem{Update: &types.Update{
					TableName:                 aws.String(s.tables.Slots),
					Key:                       slotKey(upstream, slotCounter),
					UpdateExpression:          aws.String("SET in_use = in_use - :one"),
					ConditionExpression:       aws.String("in_use > :zero"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":zero": intAV(0), ":one": intAV(1)},
				}})
			if err == nil {
				return nil
			}
			if reasons := cancelReasons(err); reasons == nil {
				return fmt.Errorf("release a slot at %s: %w", upstream, err)
			} else if failed, _ := conditionFailed(reasons, 1); failed {
				return fmt.Errorf("release a slot at %s: the counter is already 0", upstream)
			}
		}
		// The holder's item changed meanwhile: look again.
	}
	return fmt.Errorf("slot of %s at %s kept changing over %d attempts: %w", holder, upstream, slotAttempts, domain.ErrConflict)
}

func (s *Store) SlotQueuePosition(ctx context.Context, upstream, holder string) (int, error) {
	me, err := s.slotHolder(ctx, upstream, holder)
	if err != nil || me.state != slotWaiting {
		return 0, err
	}
	ahead, err := s.waitersAhead(ctx, upstream, me.waitKey, 0)
	if err != nil {
		return 0, err
	}
	return ahead + 1, nil
}
