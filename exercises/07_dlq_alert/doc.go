// Package dlqalert is exercise 07 (lesson Q09, a DLQ alert): a separate
// DLQ-Worker takes each task off the dead-letter queue and mails the
// admin, once per task; the retry workers never wait for the mail.
//
// Edit dlq_alert.go only; check_test.go is the checker (`qlab ex check 7`).
package dlqalert
