"""Mesa llvmpipe (the GPU of machines without one): its compute threads, where they wait, and a
helper process that compiles a large model's shaders ahead."""
