package rabbit

// DeclareRoutes lets the external tests declare a topology's exchanges
// alone, to stall the broker between a run's queues and its exchanges.
var DeclareRoutes = (*Session).declareRoutes
