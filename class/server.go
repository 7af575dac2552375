package class

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

//go:embed page
var pageFiles embed.FS

// NewHandler serves board: reports in, progress out, and the page.
func NewHandler(board *Board) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/report", func(w http.ResponseWriter, r *http.Request) {
		report(board, w, r)
	})
	mux.HandleFunc("GET /api/progress", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(board.Progress())
	})
	mux.HandleFunc("GET /{$}", asset("page/index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /app.js", asset("page/app.js", "text/javascript; charset=utf-8"))
	return secured(mux)
}

// NewServer is an http.Server for handler with every phase of a request
// bounded, so a slow or stuck client cannot hold a connection for ever.
func NewServer(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
}

// report takes one Report: 204 when kept, 400 with the reason when it is
// not a report, 503 when the room is full.
func report(board *Board, w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "bad report: want Content-Type application/json", http.StatusBadRequest)
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		http.Error(w, "bad report: "+decodeProblem(err), http.StatusBadRequest)
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		http.Error(w, "bad report: one JSON object, nothing after it", http.StatusBadRequest)
		return
	}
	switch err := board.Add(rep, time.Now()); {
	case errors.Is(err, ErrFull):
		http.Error(w, "the class is full: ask your instructor", http.StatusServiceUnavailable)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// decodeProblem says in a few words why a body is not a Report.
func decodeProblem(err error) string {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Sprintf("larger than %d bytes", MaxBody)
	}
	return "not a JSON report (" + err.Error() + ")"
}

// asset serves one embedded file.
func asset(name, contentType string) http.HandlerFunc {
	body, err := pageFiles.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: a missing file is a build mistake
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}
}

// secured adds headers that keep the page to its own script and data:
// nothing a report says can become markup or code in the browser.
func secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}
