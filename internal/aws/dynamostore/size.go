package dynamostore

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is an item's size as DynamoDB counts it for the 400 KB limit and
// for billing: each attribute's name in UTF-8 bytes plus its value's size
// (AttributeSize).
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + AttributeSize(v)
	}
	return n
}

// AttributeSize is a value's size: a string's UTF-8 bytes; a number's
// significant digits, two a byte, plus one; a binary's bytes; 1 for a
// boolean or null; a list or map 3 bytes plus 1 per element besides the
// elements (and a map's names); a set the sum of its elements.
func AttributeSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return numberSize(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + AttributeSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + AttributeSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range x.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, e := range x.Value {
			n += numberSize(e)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, e := range x.Value {
			n += len(e)
		}
		return n
	}
	return 0
}

// numberSize: DynamoDB stores numbers in a variable-length decimal form of
// about one byte per two significant digits, plus one.
func numberSize(s string) int {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	mant, _, _ := strings.Cut(strings.ToLower(s), "e")
	digits := strings.Trim(strings.Replace(mant, ".", "", 1), "0")
	n := (len(digits)+1)/2 + 1
	if neg {
		n++
	}
	return n
}
