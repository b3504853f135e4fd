"""Training Bi3D models: synthetic and user data, losses, the training loop."""
