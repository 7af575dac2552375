package rabbit

import (
	"math"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// headerValue builds one of the value types an AMQP header table can hold
// (as amqp091-go decodes it), chosen by kind, from the fuzzer's numbers.
func headerValue(kind uint8, i int64, u uint64, s string) any {
	switch kind % 12 {
	case 0:
		return i
	case 1:
		return int32(i)
	case 2:
		return int16(i)
	case 3:
		return int8(i)
	case 4:
		return uint8(u)
	case 5:
		return uint16(u)
	case 6:
		return uint32(u)
	case 7:
		return u
	case 8:
		return s
	case 9:
		return float64(i)
	case 10:
		return []any{i}
	}
	return nil
}

// FuzzReadRetries: whatever a retry header holds, ReadRetries never
// panics, and a count it accepts is an integer in [0, MaxRetryCount]
// equal to the value sent; anything else is refused.
func FuzzReadRetries(f *testing.F) {
	f.Add(uint8(0), int64(3), uint64(0), "")
	f.Add(uint8(0), int64(-4165776671792680912), uint64(0), "") // issue 14's forged x-retries
	f.Add(uint8(0), int64(math.MaxInt64), uint64(0), "")
	f.Add(uint8(0), int64(1001), uint64(0), "")
	f.Add(uint8(1), int64(-4), uint64(0), "")
	f.Add(uint8(7), int64(0), uint64(math.MaxUint64), "")
	f.Add(uint8(8), int64(0), uint64(0), "3")
	f.Fuzz(func(t *testing.T, kind uint8, i int64, u uint64, s string) {
		v := headerValue(kind, i, u, s)
		n, err := ReadRetries(amqp.Table{RetriesHeader: v}, RetriesHeader)
		want, isInt := integer(v)
		valid := isInt && want >= 0 && want <= MaxRetryCount
		if v == nil {
			valid, want = false, 0
		}
		switch {
		case valid && (err != nil || int64(n) != want):
			t.Fatalf("%T %v: got %d, %v; want %d", v, v, n, err, want)
		case !valid && err == nil:
			t.Fatalf("%T %v: accepted as %d", v, v, n)
		case 1+n < 1 || n > MaxRetryCount:
			t.Fatalf("%T %v: attempt %d out of range", v, v, 1+n)
		}
	})
}

// FuzzParseDeaths: whatever x-death holds, ParseDeaths and ReadDeaths never
// panic; what they return has no negative count, sums never go negative,
// and Attempt is always in [1, MaxRetryCount+1].
func FuzzParseDeaths(f *testing.F) {
	f.Add(uint8(0), uint8(1), int64(2), uint64(0), "rejected", uint8(0))
	f.Add(uint8(0), uint8(1), int64(-99), uint64(0), "rejected", uint8(0)) // a forged negative count
	f.Add(uint8(0), uint8(3), int64(math.MaxInt64), uint64(0), "rejected", uint8(0))
	f.Add(uint8(0), uint8(1), int64(1000), uint64(0), "rejected", uint8(0))
	f.Add(uint8(8), uint8(1), int64(0), uint64(0), "expired", uint8(0))
	f.Add(uint8(0), uint8(1), int64(1), uint64(0), "rejected", uint8(1)) // not an array
	f.Add(uint8(0), uint8(1), int64(1), uint64(0), "rejected", uint8(2)) // entries not tables
	f.Fuzz(func(t *testing.T, kind, entries uint8, i int64, u uint64, reason string, shape uint8) {
		raw := make([]any, 0, entries%8)
		for range entries % 8 {
			entry := amqp.Table{"queue": "q", "reason": reason, "count": headerValue(kind, i, u, reason)}
			if shape%3 == 2 {
				raw = append(raw, map[string]any(entry)) // a plain map is not an amqp.Table
				continue
			}
			raw = append(raw, entry)
		}
		var header any = raw
		if shape%3 == 1 {
			header = reason
		}
		headers := amqp.Table{"x-death": header}
		strict, err := ParseDeaths(headers)
		if err == nil {
			check(t, strict)
		}
		check(t, ReadDeaths(headers))
	})
}

func check(t *testing.T, ds Deaths) {
	t.Helper()
	for _, d := range ds {
		if d.Count < 0 {
			t.Fatalf("negative count kept: %+v", d)
		}
	}
	if ds.Reason("rejected") < 0 || ds.Count("q") < 0 {
		t.Fatalf("a sum went negative: %+v", ds)
	}
	if n, _ := ds.Attempt(); n < 1 || n > MaxRetryCount+1 {
		t.Fatalf("attempt %d out of range: %+v", n, ds)
	}
}
