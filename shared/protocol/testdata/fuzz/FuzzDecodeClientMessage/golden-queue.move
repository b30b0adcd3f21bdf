go test fuzz v1
[]byte("{\"type\":\"queue.move\",\"request_id\":\"5\",\"session_id\":\"...\",\"queue_id\":\"...\",\"revision\":3,\"before_queue_id\":\"...\"}")
