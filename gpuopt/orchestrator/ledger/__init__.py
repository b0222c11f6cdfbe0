"""The ledger: what every attempt really cost, at the price in force when it ran."""
