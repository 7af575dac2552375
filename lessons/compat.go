package lessons

import "github.com/queuelab/qlab/lesson"

var (
	planQueue     = lesson.PlanQueue
	workerName    = lesson.WorkerName
	watchInMem    = lesson.WatchInMem
	closeSession  = lesson.CloseSession
	brokerNames   = lesson.BrokerNames
	topologyTable = lesson.TopologyTable
	brokerVersion = lesson.BrokerVersion
)
