"""What can be bought: GPU hardware, offers, cloud price adapters and the embedded snapshot."""
