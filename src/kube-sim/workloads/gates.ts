// Image gates: pods whose containers use a held image wait before their containers start
// (ContainerCreating, not Ready, as behind a long image pull) until the image is released.
// For tests that need an order ("this deployment becomes ready after that one"): they hold an
// image, see the other side happen, then release it, instead of hoping a slower image stays
// slower on a loaded machine. Held pods keep their placement and events; a release starts them
// on the next tick as if the pull had just finished.
//
// Matching is by the exact image reference a container names; a gate outlives the pods it
// holds (pods created later with the image are held too) until released.
export class ImageGates {
  private readonly held = new Set<string>();

  hold(image: string): void {
    this.held.add(image);
  }

  /** Lifts the gate; true when it was held. */
  release(image: string): boolean {
    return this.held.delete(image);
  }

  /** Whether any of these images is held. */
  holds(images: readonly (string | undefined)[]): boolean {
    return images.some((i) => i !== undefined && this.held.has(i));
  }

  list(): string[] {
    return [...this.held].sort();
  }
}
