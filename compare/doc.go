// Package compare answers seed Q10's "in-memory vs RabbitMQ" table with
// measurements. It runs one lesson on both backends with the same tasks and
// failure plan and reduces the two event streams to tables: per-task fates
// and timings side by side, retry delays configured vs observed,
// persistence under a real interruption, throughput with 1 vs 4 consumers,
// queue depths over time and what had to exist before the run. Each
// measured row runs several times per backend (Config.Repeat) and shows
// the median and range; rows that spread widely are marked timing-sensitive.
//
// The reductions are pure functions of recorded events (Side), so they are
// tested without a broker; Run does the running.
package compare
