"""fedbw calibrate's probe app (a Flower app directory shipped with fedbw)."""
