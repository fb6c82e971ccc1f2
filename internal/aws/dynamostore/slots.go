package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// The slots table keeps each upstream's slots under its name, with no item
// that grows with the holders or the waiters:
//
//	entry "#counter"      in_use: the slots taken; rev: counts the takes
//	                      and releases; reclaimed_at: the last look for
//	                      slots of work that is gone (Unix seconds)
//	entry "h#<holder>"    state holding, or state waiting with wait_key
//	                      "<since>#<holder>", which puts the waiter in the
//	                      sparse wait-index (an LSI, read consistently) in
//	                      the order waiters are served; expires_at (Unix
//	                      seconds, the table's TTL): a holder's at +
//	                      store.SlotHoldLimit, a waiter's last ask +
//	                      store.SlotWaiterTimeout
//
// Taking a slot is one transaction of the counter (in_use < limit) and the
// holder's item; joining the wait list and leaving it write the holder's
// item alone. The rules are store.SlotState's: a holder keeps its slot, a
// new holder takes a free slot only when no one waits ahead of it, and
// waiters take free slots in the order of their wait keys. An ask that
// gets no slot first frees the slots and places of work that is gone
// (reclaimSlots): the holders and waiters past expires_at, and the count of
// holders TTL removed.
const (
	slotCounter  = "#counter"
	slotHolder   = "h#"
	slotHolding  = "holding"
	slotWaiting  = "waiting"
	slotAttempts = 25
	// slotReclaimEvery spaces the looks for slots of work that is gone (a
	// read of the upstream's items) at each upstream.
	slotReclaimEvery = 30 * time.Second
	// slotAskRefresh is how often a waiter's asks move its expires_at.
	slotAskRefresh = time.Minute
	// slotReclaimMax bounds the items one reclaim deletes (a transaction
	// holds 100 with the counter).
	slotReclaimMax = 99
)

func slotKey(upstream, entry string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"upstream": strAV(upstream), "entry": strAV(entry)}
}

func waitKey(since time.Time, holder string) string { return formatTime(since) + "#" + holder }

type slotHolderState struct {
	state   string // "", holding or waiting
	at      time.Time
	waitKey string
	expires time.Time // zero: none recorded
}

// unixAttr is an item's number attribute as Unix seconds (zero time when
// it has none).
func unixAttr(item map[string]types.AttributeValue, name string) (time.Time, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored %s %q: %w", name, v.Value, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

func unixAV(t time.Time) types.AttributeValue { return intAV(t.Unix()) }

// slotItemState reads a holder's item.
func slotItemState(item map[string]types.AttributeValue) (slotHolderState, error) {
	st := slotHolderState{state: stringAttr(item, "state"), waitKey: stringAttr(item, "wait_key")}
	var err error
	if st.at, err = parseTime(stringAttr(item, "at")); err != nil {
		return slotHolderState{}, err
	}
	if st.expires, err = unixAttr(item, "expires_at"); err != nil {
		return slotHolderState{}, err
	}
	return st, nil
}

func (s *Store) slotHolder(ctx context.Context, upstream, holder string) (slotHolderState, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotHolder+holder), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return slotHolderState{}, fmt.Errorf("read slot of %s at %s: %w", holder, upstream, err)
	}
	return slotItemState(out.Item)
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
		TableName: aws.String(s.tables.Slots), IndexName: aws.String(indexSlotWait),
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
	reclaimed := false
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
		// No slot: first free those of work that is gone, once per ask.
		if !reclaimed {
			reclaimed = true
			changed, err := s.reclaimSlots(ctx, upstream, at)
			if err != nil {
				return false, err
			}
			if changed {
				continue
			}
		}
		if waiting {
			return false, s.askedAgain(ctx, upstream, holder, me, at)
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.tables.Slots),
			Item: map[string]types.AttributeValue{"upstream": strAV(upstream), "entry": strAV(slotHolder + holder),
				"state": strAV(slotWaiting), "at": strAV(formatTime(at)), "wait_key": strAV(mine),
				"expires_at": unixAV(at.Add(store.SlotWaiterTimeout))},
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
			"state": strAV(slotHolding), "at": strAV(formatTime(at)), "expires_at": unixAV(at.Add(store.SlotHoldLimit))},
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
			UpdateExpression:          aws.String("SET in_use = if_not_exists(in_use, :zero) + :one, rev = if_not_exists(rev, :zero) + :one"),
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
					UpdateExpression:          aws.String("SET in_use = in_use - :one, rev = if_not_exists(rev, :zero) + :one"),
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

// askedAgain moves a waiter's expires_at on when its asks have not moved it
// for slotAskRefresh; a waiter that changed meanwhile is left as it is.
func (s *Store) askedAgain(ctx context.Context, upstream, holder string, me slotHolderState, at time.Time) error {
	if !me.expires.IsZero() && me.expires.Sub(at) > store.SlotWaiterTimeout-slotAskRefresh {
		return nil
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotHolder+holder),
		UpdateExpression:          aws.String("SET expires_at = :exp"),
		ConditionExpression:       aws.String("#st = :waiting AND wait_key = :mine"),
		ExpressionAttributeNames:  map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":exp": unixAV(at.Add(store.SlotWaiterTimeout)), ":waiting": strAV(slotWaiting), ":mine": strAV(me.waitKey)},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("keep a place in line at %s: %w", upstream, err)
	}
	return nil
}

// reclaimSlots frees the slots and places in line of work that is gone: it
// deletes the holders and waiters past their expires_at, and sets in_use to
// the holders left, which also gives back a slot whose item TTL removed.
// One transaction does it, on the condition that no slot was taken or
// released since the counter was read (rev), so the count it writes is
// exact. It looks at most every slotReclaimEvery per upstream, and says
// whether it changed anything.
func (s *Store) reclaimSlots(ctx context.Context, upstream string, now time.Time) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotCounter), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("read slots of %s: %w", upstream, err)
	}
	last, err := unixAttr(out.Item, "reclaimed_at")
	if err != nil {
		return false, fmt.Errorf("slots of %s: %w", upstream, err)
	}
	if !last.IsZero() && now.Before(last.Add(slotReclaimEvery)) {
		return false, nil
	}
	inUse, _ := out.Item["in_use"].(*types.AttributeValueMemberN)
	rev, hasRev := out.Item["rev"].(*types.AttributeValueMemberN)

	live := 0
	var gone []types.TransactWriteItem
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Slots),
		KeyConditionExpression: aws.String("upstream = :u AND begins_with(entry, :h)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(upstream), ":h": strAV(slotHolder)},
		ConsistentRead: aws.Bool(true),
	}
	for {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return false, fmt.Errorf("read the slots of %s: %w", upstream, err)
		}
		for _, item := range page.Items {
			st, err := slotItemState(item)
			if err != nil {
				return false, fmt.Errorf("slots of %s: %w", upstream, err)
			}
			expires := st.expires
			if expires.IsZero() && st.state == slotHolding {
				expires = st.at.Add(store.SlotHoldLimit) // taken before items expired
			}
			if expires.IsZero() || now.Before(expires) {
				if st.state == slotHolding {
					live++
				}
				continue
			}
			if len(gone) < slotReclaimMax {
				// Unless it changed since it was read (a waiter asked again).
				cond, values := "attribute_not_exists(entry) OR (#st = :st AND attribute_not_exists(expires_at))",
					map[string]types.AttributeValue{":st": strAV(st.state)}
				if exp, ok := item["expires_at"]; ok {
					cond, values[":exp"] = "attribute_not_exists(entry) OR (#st = :st AND expires_at = :exp)", exp
				}
				gone = append(gone, types.TransactWriteItem{Delete: &types.Delete{
					TableName:                 aws.String(s.tables.Slots),
					Key:                       map[string]types.AttributeValue{"upstream": item["upstream"], "entry": item["entry"]},
					ConditionExpression:       aws.String(cond),
					ExpressionAttributeNames:  map[string]string{"#st": "state"},
					ExpressionAttributeValues: values,
				}})
			} else if st.state == slotHolding {
				live++ // left for the next look
			}
		}
		if page.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}

	counted := -1
	if inUse != nil {
		if counted, err = strconv.Atoi(inUse.Value); err != nil {
			return false, fmt.Errorf("slots of %s: stored count %q: %w", upstream, inUse.Value, err)
		}
	}
	counter := &types.Update{
		TableName: aws.String(s.tables.Slots), Key: slotKey(upstream, slotCounter),
		UpdateExpression:          aws.String("SET reclaimed_at = :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": unixAV(now)},
	}
	if len(gone) == 0 && (counted == live || (counted < 0 && live == 0)) {
		// Nothing is gone: note the look, whatever else changed meanwhile.
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: counter.TableName, Key: counter.Key,
			UpdateExpression: counter.UpdateExpression, ExpressionAttributeValues: counter.ExpressionAttributeValues})
		if err != nil {
			return false, fmt.Errorf("note the look at the slots of %s: %w", upstream, err)
		}
		return false, nil
	}
	counter.UpdateExpression = aws.String("SET reclaimed_at = :now, in_use = :live, rev = if_not_exists(rev, :zero) + :one")
	counter.ExpressionAttributeValues[":live"] = intAV(int64(live))
	counter.ExpressionAttributeValues[":zero"] = intAV(0)
	counter.ExpressionAttributeValues[":one"] = intAV(1)
	if hasRev {
		counter.ConditionExpression = aws.String("rev = :rev")
		counter.ExpressionAttributeValues[":rev"] = rev
	} else {
		counter.ConditionExpression = aws.String("attribute_not_exists(rev)")
	}
	err = s.transact(ctx, append([]types.TransactWriteItem{{Update: counter}}, gone...)...)
	if err == nil {
		return true, nil
	}
	if cancelReasons(err) != nil {
		return false, nil // a slot was taken or released, or a waiter asked, meanwhile: the next ask looks again
	}
	return false, fmt.Errorf("free the slots of work that is gone at %s: %w", upstream, err)
}
