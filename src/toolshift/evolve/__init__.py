"""Task evolution (TURTLE): tasks mutated toward the solver's frontier, verified on a world, kept by fitness."""
