package domain

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// CreditPlaces is the precision of every stored credit amount.
const CreditPlaces = 2

// ParseCredits reads a non-negative credit amount with at most two decimal
// places, such as "10" or "12.50".
func ParseCredits(s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero, fmt.Errorf("%w: credits %q is not a number", ErrInvalid, s)
	}
	if err := CheckCredits(d); err != nil {
		return decimal.Zero, err
	}
	return d, nil
}

// CheckCredits accepts amounts that are not negative and carry no more than
// two decimal places, so that every store can keep them exactly.
func CheckCredits(d decimal.Decimal) error {
	if d.IsNegative() {
		return fmt.Errorf("%w: credits must not be negative, got %s", ErrInvalid, d)
	}
	if !d.Equal(d.Truncate(CreditPlaces)) {
		return fmt.Errorf("%w: credits carry at most %d decimal places, got %s", ErrInvalid, CreditPlaces, d)
	}
	return nil
}

// CreditsToCents converts an amount to an integer count of hundredths.
func CreditsToCents(d decimal.Decimal) (int64, error) {
	if err := CheckCredits(d); err != nil {
		return 0, err
	}
	c := d.Shift(CreditPlaces)
	if !c.IsInteger() || c.GreaterThan(decimal.NewFromInt(1<<62)) {
		return 0, fmt.Errorf("%w: credits %s out of range", ErrInvalid, d)
	}
	return c.IntPart(), nil
}

// CentsToCredits is the inverse of CreditsToCents.
func CentsToCredits(c int64) decimal.Decimal { return decimal.New(c, -CreditPlaces) }

// FormatCredits renders an amount the way the API carries it: two places.
func FormatCredits(d decimal.Decimal) string { return d.StringFixed(CreditPlaces) }
