package lessons

import "github.com/queuelab/qlab/rabbit"

// newRunNames makes the per-run queue prefix of RabbitMQ lessons; a test
// (never a parallel one) replaces it to know a run's names in advance.
var newRunNames = rabbit.RunNames

// brokerNames picks a RabbitMQ lesson's queue names: the seed's exact names
// with --names seed, otherwise a fresh per-run prefix so runs never collide.
func brokerNames(env *Env) rabbit.Names {
	if env.SeedNames {
		return rabbit.SeedNames()
	}
	return newRunNames()
}
