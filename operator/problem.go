package operator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sluice-go/sluice/core"
)

// MaxBodyBytes bounds a request body; a longer one is refused with 413.
const MaxBodyBytes = 64 << 10

// Problem is an RFC 9457 problem details object, the body of every error
// answer (Content-Type application/problem+json).
type Problem struct {
	Type   string `json:"type" doc:"always about:blank: the status says what kind of problem"`
	Title  string `json:"title" doc:"the status's text"`
	Status int    `json:"status"`
	Detail string `json:"detail" doc:"what is wrong, for a person"`
	// Field is the JSON field (or query parameter) at fault, when one is.
	Field string `json:"field,omitempty" doc:"the JSON field or query parameter at fault"`
}

// problem is an error answered as a Problem.
type problem struct {
	status int
	field  string
	detail string
}

func (p *problem) Error() string {
	if p.field != "" {
		return p.field + ": " + p.detail
	}
	return p.detail
}

func fieldError(field, format string, args ...any) error {
	return &problem{status: http.StatusBadRequest, field: field, detail: fmt.Sprintf(format, args...)}
}

// writeProblem answers err. A problem keeps its status and field; the
// manager's errors are classed by the sentinel they wrap, and their text,
// which names what is wrong and never a secret, is the detail; any other
// failure is a 500 whose detail says nothing of the internals.
func writeProblem(w http.ResponseWriter, err error, fields fieldNames) {
	p := asProblem(err, fields)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	if p.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice operator"`)
	}
	w.WriteHeader(p.status)
	_ = json.NewEncoder(w).Encode(Problem{Type: "about:blank", Title: http.StatusText(p.status), Status: p.status, Detail: p.detail, Field: p.field})
}

func asProblem(err error, fields fieldNames) *problem {
	var p *problem
	if errors.As(err, &p) {
		return p
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &problem{status: http.StatusRequestEntityTooLarge, detail: fmt.Sprintf("the body is longer than %d bytes", tooBig.Limit)}
	case errors.Is(err, core.ErrInvalid):
		return &problem{status: http.StatusBadRequest, field: fields.of(err.Error()), detail: err.Error()}
	case errors.Is(err, core.ErrNotFound):
		return &problem{status: http.StatusNotFound, detail: err.Error()}
	case errors.Is(err, core.ErrUnsupported), errors.Is(err, core.ErrSchema):
		return &problem{status: http.StatusNotImplemented, detail: err.Error()}
	case errors.Is(err, core.ErrContention):
		return &problem{status: http.StatusConflict, detail: err.Error()}
	}
	return &problem{status: http.StatusInternalServerError, detail: "the operation failed; the server's log says why"}
}

// fieldNames translates the names the manager's errors use (Go's, such as
// "RateLimit.Window") into the JSON fields of a request: the manager
// decides what is valid, the API only says which of its fields that was.
// The first name that occurs in the message wins; longer names are looked
// for before the names they start with.
type fieldNames []struct{ goName, field string }

func (f fieldNames) of(msg string) string {
	best, at, long := "", len(msg), 0
	for _, n := range f {
		if i := strings.Index(msg, n.goName); i >= 0 && (i < at || i == at && len(n.goName) > long) {
			best, at, long = n.field, i, len(n.goName)
		}
	}
	return best
}

// decodeBody reads r's JSON body into v: at most MaxBodyBytes, one value,
// no field v does not have. A field of the wrong type is named.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return &problem{status: http.StatusBadRequest, detail: "the body holds more than one JSON value"}
		}
		return nil
	}
	var (
		tooBig  *http.MaxBytesError
		typeErr *json.UnmarshalTypeError
		syntax  *json.SyntaxError
	)
	switch {
	case errors.As(err, &tooBig):
		return err
	case errors.As(err, &typeErr):
		return fieldError(typeErr.Field, "must be %s, not %s", jsonKind(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return &problem{status: http.StatusBadRequest, detail: "the body is not valid JSON: " + err.Error()}
	case errors.Is(err, io.EOF):
		return &problem{status: http.StatusBadRequest, detail: "the body is empty; send a JSON object"}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return fieldError(name, "is not a field of this request")
	}
	var fe *fieldErr
	if errors.As(err, &fe) {
		return fieldError(fe.field, "%s", fe.msg)
	}
	return &problem{status: http.StatusBadRequest, detail: err.Error()}
}

// fieldErr is a field's own decoding error (see duration types).
type fieldErr struct{ field, msg string }

func (e *fieldErr) Error() string { return e.field + ": " + e.msg }

// jsonKind names a Go type as the JSON it is read from.
func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.Contains(goType, "string") && strings.HasPrefix(goType, "map"):
		return "an object"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "string":
		return "a string"
	}
	return "a value of type " + goType
}
