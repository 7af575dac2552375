package render

import (
	"encoding/json"
	"io"

	"github.com/queuelab/qlab/lab"
)

// JSONSink writes each event as one JSON object per line: the public
// contract of `qlab run N --json`.
type JSONSink struct{ enc *json.Encoder }

// NewJSONSink returns a sink writing JSON lines to w.
func NewJSONSink(w io.Writer) JSONSink {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return JSONSink{enc: enc}
}

// Emit writes e. An Event always encodes, and a write error on stdout has
// nowhere better to go, so errors are ignored.
func (j JSONSink) Emit(e lab.Event) { _ = j.enc.Encode(e) }
